"""User dictionary: words with your reading and accent, through OpenJTalk's own user dictionary.

Entries are compiled with ``pyopenjtalk.mecab_dict_index`` into a MeCab user dictionary and
installed with ``pyopenjtalk.update_global_jtalk_with_user_dict``, so OpenJTalk segments the
text with them: the reading gives the phones, the accent gives the tones, and BERT still
reads the written word. pyopenjtalk holds one dictionary per process, so there is one
*active* :class:`UserDictionary` per process; :func:`add_word` and
:func:`load_user_dictionary` work on it. The rewrite pass leaves its surfaces alone, so no
built-in reading (e.g. for Latin words) overrides a user word.

With no user words the frontend is the reference's; with words, text containing them is
read as the dictionary says (that is the point), everything else is unchanged.

File formats (see ``docs/frontend.md``):

- **CSV** (``.csv``, UTF-8): ``surface,reading[,accent[,priority]]`` per line; ``#``
  starts a comment line; a first line starting with ``surface`` is a header.
- **JSON** (``.json``): a list of objects, or ``{"words": [...]}``; each object has
  ``surface``, ``reading`` and optionally ``accent``, ``priority``, ``pos``.

``reading``: katakana or hiragana (pronunciation: write ``ワ`` for the particle は).
``accent``: the mora after which the pitch falls; 0 = flat (heiban), 1 = high first mora,
*n* = falls after mora *n* (``ー``, ``ッ``, ``ン`` count as morae); omitted → OpenJTalk's own
guess for the reading. ``priority`` 0–10 (default 5): higher wins more often against the
system dictionary's segmentation. ``pos``: ``proper_noun`` (default) or ``noun``.

Every word, from any door (the page, the engine API, a file, code), passes the one check of
:meth:`UserWord.make`: the bounds below (:data:`MAX_SURFACE`, :data:`MAX_READING`,
:data:`MIN_PRIORITY`/:data:`MAX_PRIORITY`), the accent within the reading's morae, and no
character OpenJTalk cannot take. The compiler checks each word again, so a word built without
it is skipped with a warning instead of reaching OpenJTalk.
"""

from __future__ import annotations

import atexit
import csv
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import EngineError
from .mora import MORA_TO_PHONES

__all__ = [
    "MAX_PRIORITY",
    "MAX_READING",
    "MAX_SURFACE",
    "MIN_PRIORITY",
    "UserDictionary",
    "UserDictionaryError",
    "UserWord",
    "active_dictionary",
    "active_surfaces",
    "add_word",
    "clear_user_dictionary",
    "load_user_dictionary",
    "read_user_dictionary",
]

_LOGGER = logging.getLogger(__name__)

# -- bounds --------------------------------------------------------------------------------
# What OpenJTalk's C code does past them (pyopenjtalk 0.0.10, measured in a subprocess each):
# - the dictionary compiler (``mecab_dict_index``) reads each CSV line into an 8,192-byte
#   buffer: a line longer than that is a segmentation fault. The surface is written twice
#   per line, 3 UTF-8 bytes per character as OpenJTalk holds it (full width), so a surface
#   of 1,356 characters kills the process while the dictionary is compiled (1,355: fine);
# - a word's surface or reading longer than 1,023 bytes (341 katakana or kanji) is cut
#   mid-character when it is read: every request holding it fails (UnicodeDecodeError),
#   and a reading of ~700 morae is a segmentation fault at the first request;
# - the frontend's own text buffer (``run_frontend``, used to compile the surface) is a
#   segmentation fault or a bus error past ~2,700 characters (5,000 crashed, 2,048 did not).

MAX_SURFACE = 64
"""Longest surface, in characters (after NFKC, and again as OpenJTalk reads it, numbers
spelled out in kanji). At most 4 UTF-8 bytes each: 256 bytes, a quarter of the 1,023 bytes
OpenJTalk reads of a word and 1/32 of the compiler's line; a name or a phrase fits."""

MAX_READING = 64
"""Longest reading, in katakana characters, so at most 64 morae: 192 bytes, under a fifth
of the 1,023 bytes OpenJTalk reads of a word's pronunciation."""

MIN_PRIORITY = 0
"""Lowest priority (the word rarely wins against the system dictionary's segmentation)."""

MAX_PRIORITY = 10
"""Highest priority; its cost (``8000 - 1600 * priority``) stays a small positive MeCab cost."""

_RAW_FACTOR = 4
"""A value longer than this many times its bound is refused before it is normalised (NFKC
can shorten text, e.g. half-width kana with a voiced mark, but not by this much)."""

_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character",
    "Cs": "a lone surrogate (not UTF-8)",
    "Co": "a private-use character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}

_POS = {
    "proper_noun": ("名詞", "固有名詞", "一般", "*"),
    "noun": ("名詞", "一般", "*", "*"),
}
_SMALL_KANA = frozenset("ァィゥェォャュョヮ")
# A surface that never occurs in normalised text: keeps a dictionary loaded when empty.
_SENTINEL_SURFACE = "\U000f0000"


class UserDictionaryError(EngineError, ValueError):
    """A user-dictionary entry or file is invalid (the message names the file/field)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        """The word's field at fault (``surface``, ``reading``, ``accent``, ``priority``,
        ``pos``); None for a fault of the file or the entry as a whole."""


def _short(value: object) -> str:
    """A value as an error message quotes it: its ``repr``, cut after 24 characters."""
    shown = repr(value)
    return shown if len(shown) <= 26 else shown[:24] + "…"


def _check_characters(surface: str, where: str) -> None:
    for char in surface:
        category = unicodedata.category(char)
        if category in _REFUSED_CATEGORIES:
            raise UserDictionaryError(
                f"{where}: surface has {_REFUSED_CATEGORIES[category]} "
                f"(U+{ord(char):04X}), which OpenJTalk cannot read",
                "surface",
            )


def _check_surface(surface: object, where: str) -> str:
    """The surface as stored (NFKC, stripped), within bounds and readable by OpenJTalk."""
    if not isinstance(surface, str) or not surface.strip():
        raise UserDictionaryError(f"{where}: surface must be a non-empty string", "surface")
    too_long = f"{where}: surface must be at most {MAX_SURFACE} characters"
    if len(surface) > _RAW_FACTOR * MAX_SURFACE:
        raise UserDictionaryError(f"{too_long}, got {len(surface)}", "surface")
    stored = unicodedata.normalize("NFKC", surface.strip())
    if len(stored) > MAX_SURFACE:
        normalised = " once normalised (NFKC)" if len(stored) != len(surface.strip()) else ""
        raise UserDictionaryError(f"{too_long}, got {len(stored)}{normalised}", "surface")
    _check_characters(stored, where)
    from .normalizer import normalize_text

    try:
        read = normalize_text(stored)
    except (ArithmeticError, ValueError) as exc:  # num2words: a number too large to read
        raise UserDictionaryError(
            f"{where}: surface {_short(stored)} cannot be read ({exc.__class__.__name__})",
            "surface",
        ) from None
    if not read.strip():
        raise UserDictionaryError(
            f"{where}: surface {_short(stored)} has no readable characters", "surface"
        )
    if len(read) > MAX_SURFACE:
        raise UserDictionaryError(
            f"{where}: surface {_short(stored)} reads as {len(read)} characters once numbers "
            f"and symbols are spelled out; at most {MAX_SURFACE}",
            "surface",
        )
    return stored


def to_katakana(text: str) -> str:
    """Hiragana → katakana (other characters unchanged)."""
    return "".join(chr(ord(c) + 0x60) if "\u3041" <= c <= "\u3096" else c for c in text)


def count_morae(reading: str) -> int:
    """Morae of a katakana reading (small ャュョァィゥェォヮ join the mora before)."""
    return sum(1 for c in reading if c not in _SMALL_KANA)


def _check_reading(reading: object, where: str) -> str:
    if not isinstance(reading, str):
        raise UserDictionaryError(f"{where}: reading must be a string", "reading")
    too_long = f"{where}: reading must be at most {MAX_READING} characters"
    if len(reading) > _RAW_FACTOR * MAX_READING:
        raise UserDictionaryError(f"{too_long}, got {len(reading)}", "reading")
    kata = (
        to_katakana(unicodedata.normalize("NFKC", reading)).replace(" ", "").replace("\u3000", "")
    )
    if not kata:
        raise UserDictionaryError(f"{where}: reading is empty", "reading")
    if len(kata) > MAX_READING:
        raise UserDictionaryError(f"{too_long}, got {len(kata)}", "reading")
    if not re.fullmatch(r"[\u30a1-\u30fcー]+", kata):
        raise UserDictionaryError(
            f"{where}: reading {_short(reading)} must be katakana or hiragana", "reading"
        )
    i = 0
    while i < len(kata):
        if kata[i : i + 2] in MORA_TO_PHONES:
            i += 2
        elif kata[i] in MORA_TO_PHONES or kata[i] == "ー":
            i += 1
        else:
            raise UserDictionaryError(
                f"{where}: reading {_short(reading)} has {kata[i]!r}, which is no mora", "reading"
            )
    return kata


@dataclass(frozen=True)
class UserWord:
    """One dictionary word (``reading`` is katakana; ``accent`` None = OpenJTalk's guess)."""

    surface: str
    reading: str
    accent: int | None = None
    priority: int = 5
    pos: str = "proper_noun"

    @staticmethod
    def make(
        surface: str,
        reading: str,
        accent: int | None = None,
        priority: int = 5,
        pos: str = "proper_noun",
        *,
        where: str = "user dictionary",
    ) -> UserWord:
        """Validate and build a word; errors name ``where`` and the field (`field`).

        The one check every word passes, whichever door it came through: see the module's
        bounds (:data:`MAX_SURFACE`, :data:`MAX_READING`, priority from
        :data:`MIN_PRIORITY` to :data:`MAX_PRIORITY`)."""
        stored = _check_surface(surface, where)
        at = f"{where} ({_short(stored)})"
        kata = _check_reading(reading, at)
        morae = count_morae(kata)
        if accent is not None:
            if isinstance(accent, bool) or not isinstance(accent, int) or not 0 <= accent <= morae:
                raise UserDictionaryError(
                    f"{at}: accent must be an integer from 0 to {morae} "
                    f"(the morae of {kata}), got {_short(accent)}",
                    "accent",
                )
        if (
            isinstance(priority, bool)
            or not isinstance(priority, int)
            or not MIN_PRIORITY <= priority <= MAX_PRIORITY
        ):
            raise UserDictionaryError(
                f"{at}: priority must be an integer from {MIN_PRIORITY} to {MAX_PRIORITY}, "
                f"got {_short(priority)}",
                "priority",
            )
        if not isinstance(pos, str) or pos not in _POS:
            raise UserDictionaryError(
                f"{at}: pos must be one of {sorted(_POS)}, got {_short(pos)}", "pos"
            )
        return UserWord(stored, kata, accent, priority, pos)


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence C-level writes to stdout (mecab_dict_index reports progress there)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), fd)
            try:
                yield
            finally:
                os.dup2(saved, fd)
    finally:
        os.close(saved)


class UserDictionary:
    """A set of :class:`UserWord`; :meth:`apply` makes it the process's active dictionary."""

    def __init__(self) -> None:
        self._words: dict[str, UserWord] = {}
        self._lock = threading.RLock()

    # -- editing --------------------------------------------------------------------------

    def add_word(
        self,
        surface: str,
        reading: str,
        accent: int | None = None,
        *,
        priority: int = 5,
        pos: str = "proper_noun",
    ) -> UserWord:
        """Add (or replace) a word. Applied at once if this is the active dictionary."""
        word = UserWord.make(surface, reading, accent, priority, pos)
        with self._lock:
            self._words[word.surface] = word
            if self.is_active:
                self.apply()
        return word

    def remove_word(self, surface: str) -> bool:
        """Remove a word; True if it was there."""
        with self._lock:
            found = (
                self._words.pop(unicodedata.normalize("NFKC", surface.strip()), None) is not None
            )
            if found and self.is_active:
                self.apply()
            return found

    def clear(self) -> None:
        """Remove every word."""
        with self._lock:
            self._words.clear()
            if self.is_active:
                self.apply()

    @property
    def words(self) -> list[UserWord]:
        return list(self._words.values())

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, surface: str) -> bool:
        return unicodedata.normalize("NFKC", surface.strip()) in self._words

    # -- files ----------------------------------------------------------------------------

    def load(self, path: str | Path, *, strict: bool = True) -> int:
        """Add the words of a CSV or JSON file (by suffix); returns how many. Applies once.

        ``strict`` (default): a bad entry is an error. Otherwise each bad entry is skipped with
        a warning that names the file and line (CSV) or index (JSON). A file that cannot be
        read or parsed at all is an error either way.
        """
        path = Path(path)
        words, problems = read_user_dictionary(path)
        if problems and strict:
            raise UserDictionaryError(problems[0])
        for problem in problems:
            _LOGGER.warning("user dictionary entry skipped: %s", problem)
        self.update(words)
        _LOGGER.info("loaded %d user dictionary words from %s", len(words), path)
        return len(words)

    def update(
        self, words: list[UserWord], *, remove: frozenset[str] | set[str] = frozenset()
    ) -> None:
        """Remove the surfaces ``remove``, add ``words`` (later ones win), apply once."""
        with self._lock:
            for surface in remove:
                self._words.pop(surface, None)
            for w in words:
                self._words[w.surface] = w
            if self.is_active:
                self.apply()

    def save(self, path: str | Path) -> None:
        """Write the words as JSON (``.json``) or CSV (otherwise)."""
        path = Path(path)
        if path.suffix.lower() == ".json":
            data = {
                "words": [{k: v for k, v in asdict(w).items() if v is not None} for w in self.words]
            }
            path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            return
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["surface", "reading", "accent", "priority"])
        for w in self.words:
            writer.writerow(
                [w.surface, w.reading, "" if w.accent is None else w.accent, w.priority]
            )
        path.write_text(buf.getvalue(), encoding="utf-8")

    # -- OpenJTalk ------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return _ACTIVE.dictionary is self

    def apply(self) -> None:
        """Compile the words and install them into pyopenjtalk (process-wide)."""
        with self._lock, _ACTIVE.lock:
            rows = []
            for w in self._words.values():
                try:
                    rows.append(_csv_row(w))
                except UserDictionaryError as exc:  # e.g. a surface with nothing readable
                    _LOGGER.warning("user dictionary word skipped: %s", exc)
            rows.append(_sentinel_row())
            _ACTIVE.install(rows)
            _ACTIVE.dictionary = self
            _ACTIVE.surfaces = frozenset(self._words)
        _LOGGER.debug("user dictionary applied (%d words)", len(rows) - 1)


def read_user_dictionary(path: str | Path) -> tuple[list[UserWord], list[str]]:
    """The good words of a CSV/JSON file and one message per bad entry (``file:line: …``).

    Raises :class:`UserDictionaryError` only when the file cannot be used at all (unreadable,
    unknown suffix, not JSON).
    """
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserDictionaryError(f"{path}: cannot read user dictionary ({exc})") from exc
    suffix = path.suffix.lower()
    problems: list[str] = []
    if suffix == ".json":
        words = _parse_json(raw, path, problems)
    elif suffix in (".csv", ".txt"):
        words = _parse_csv(raw, path, problems)
    else:
        raise UserDictionaryError(f"{path}: unknown user dictionary format (use .csv or .json)")
    return words, problems


def _csv_rows(raw: str, path: Path, problems: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(first line, fields) of each CSV record; a record the csv module refuses (a field past
    its size limit, a stray quote) is one problem naming its line, and reading goes on."""
    reader = csv.reader(io.StringIO(raw))
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(f"{path}:{start}: {exc}")
        else:
            yield start, row
        start = reader.line_num + 1


def _parse_csv(raw: str, path: Path, problems: list[str]) -> list[UserWord]:
    words = []
    for lineno, row in _csv_rows(raw, path, problems):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if lineno == 1 and row[0].strip().lower() == "surface":
            continue
        where = f"{path}:{lineno}"
        try:
            if len(row) < 2:
                raise UserDictionaryError(f"{where}: need at least surface,reading")
            fields = [c.strip() for c in row]
            accent = (
                _int_field(fields[2], "accent", where) if len(fields) > 2 and fields[2] else None
            )
            priority = (
                _int_field(fields[3], "priority", where) if len(fields) > 3 and fields[3] else 5
            )
            pos = fields[4] if len(fields) > 4 and fields[4] else "proper_noun"
            words.append(UserWord.make(fields[0], fields[1], accent, priority, pos, where=where))
        except UserDictionaryError as exc:
            problems.append(str(exc))
    return words


def _int_field(value: str, name: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise UserDictionaryError(
            f"{where}: {name} must be an integer, got {_short(value)}", name
        ) from None


def _parse_json(raw: str, path: Path, problems: list[str]) -> list[UserWord]:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # also a number past Python's digit limit
        raise UserDictionaryError(f"{path}: invalid JSON ({exc})") from exc
    if isinstance(data, dict):
        data = data.get("words")
    if not isinstance(data, list):
        raise UserDictionaryError(f'{path}: expected a list of words or {{"words": [...]}}')
    words = []
    for i, item in enumerate(data):
        where = f"{path}: words[{i}]"
        try:
            if not isinstance(item, dict):
                raise UserDictionaryError(f"{where}: expected an object with surface and reading")
            unknown = set(item) - {"surface", "reading", "accent", "priority", "pos"}
            if unknown:
                raise UserDictionaryError(f"{where}: unknown field(s) {sorted(unknown)}")
            if "surface" not in item or "reading" not in item:
                raise UserDictionaryError(f"{where}: surface and reading are required")
            words.append(
                UserWord.make(
                    item["surface"],
                    item["reading"],
                    item.get("accent"),
                    item.get("priority", 5),
                    item.get("pos", "proper_noun"),
                    where=where,
                )
            )
        except UserDictionaryError as exc:
            problems.append(str(exc))
    return words


def _mecab_surface(surface: str) -> str:
    """The surface as MeCab sees it: normalised like the frontend, then OpenJTalk's width.

    Checked first (:meth:`UserWord.make`): OpenJTalk's frontend crashes on a long text."""
    import pyopenjtalk

    from .normalizer import normalize_text

    _check_surface(surface, "user dictionary")
    norm = normalize_text(surface)
    return "".join(node["string"] for node in pyopenjtalk.run_frontend(norm))


def _guess_accent(reading: str, morae: int) -> int:
    """OpenJTalk's accent for the reading, when it reads it as a single accent phrase."""
    import pyopenjtalk

    labels = pyopenjtalk.make_label(pyopenjtalk.run_frontend(reading))
    for label in labels:
        m = re.search(r"/F:(\d+)_(\d+)#", label)
        if m:
            return int(m.group(2)) if int(m.group(1)) == morae else 0
    return 0


def _cost(priority: int) -> int:
    return 8000 - 1600 * priority


def _csv_row(word: UserWord) -> list[str]:
    # the one check again: a word built without `UserWord.make` never reaches OpenJTalk
    UserWord.make(word.surface, word.reading, word.accent, word.priority, word.pos)
    surface = _mecab_surface(word.surface)
    morae = count_morae(word.reading)
    accent = word.accent if word.accent is not None else _guess_accent(word.reading, morae)
    pos = _POS[word.pos]
    return [
        surface, "", "", str(_cost(word.priority)), *pos, "*", "*",
        surface, word.reading, word.reading, f"{accent}/{morae}", "*",
    ]  # fmt: skip


def _sentinel_row() -> list[str]:
    return [
        _SENTINEL_SURFACE,
        "",
        "",
        "10000",
        *_POS["noun"],
        "*",
        "*",
        _SENTINEL_SURFACE,
        "ア",
        "ア",
        "0/1",
        "*",
    ]


class _Active:
    """The process-wide state: pyopenjtalk has one OpenJTalk instance per process."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.dictionary: UserDictionary | None = None
        self.surfaces: frozenset[str] = frozenset()
        self._dir: str | None = None
        self._serial = 0

    def install(self, rows: list[list[str]]) -> None:
        import pyopenjtalk

        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="hayakoe-userdict-")
            atexit.register(shutil.rmtree, self._dir, True)
        self._serial += 1
        csv_path = os.path.join(self._dir, f"user{self._serial}.csv")
        dic_path = os.path.join(self._dir, f"user{self._serial}.dic")
        with open(csv_path, "w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        with _quiet_stdout():
            pyopenjtalk.mecab_dict_index(csv_path, dic_path)
        pyopenjtalk.update_global_jtalk_with_user_dict(dic_path)
        # The previous compiled file may still be mapped by nobody now; remove old files.
        for name in os.listdir(self._dir):
            if not name.startswith(f"user{self._serial}."):
                try:
                    os.remove(os.path.join(self._dir, name))
                except OSError:
                    pass


_ACTIVE = _Active()
_DEFAULT = UserDictionary()


def active_dictionary() -> UserDictionary:
    """The process's user dictionary (created empty, made active on first change)."""
    return _ACTIVE.dictionary or _DEFAULT


def active_surfaces() -> frozenset[str]:
    """Surfaces (NFKC) of the active dictionary's words; the rewrite pass protects them."""
    return _ACTIVE.surfaces


def add_word(
    surface: str,
    reading: str,
    accent: int | None = None,
    *,
    priority: int = 5,
    pos: str = "proper_noun",
) -> UserWord:
    """Add a word to the active user dictionary and apply it (what ``TTS.add_word`` calls)."""
    d = active_dictionary()
    word = d.add_word(surface, reading, accent, priority=priority, pos=pos)
    if not d.is_active:
        d.apply()
    return word


def load_user_dictionary(path: str | Path, *, strict: bool = True) -> int:
    """Load a CSV/JSON file into the active user dictionary and apply it; returns the count
    (``strict=False``: bad entries are skipped with a warning naming file and line)."""
    d = active_dictionary()
    n = d.load(path, strict=strict)
    if not d.is_active:
        d.apply()
    return n


def clear_user_dictionary() -> None:
    """Remove every word from the active dictionary (the frontend reads as the reference)."""
    d = active_dictionary()
    d.clear()
    if not d.is_active:
        d.apply()
