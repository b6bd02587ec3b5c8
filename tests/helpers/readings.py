"""The Home Assistant phrase set (tests/data/readings_ha.tsv) and how a reading is scored.

Each line is ``text<TAB>expected``. A phrase is read correctly when
``analyze(rewrite(text))`` has the same phonemes as ``analyze(expected)`` (the expected
column is written so that the reference frontend reads it right). Phonemes are compared with
``e i`` → ``e e`` and ``o u`` → ``o o`` (how えい/おう are said); accents are not compared.
Used by tests/engine/text/test_rewriter_readings.py (the share read as expected, the
figure the README quotes) and `python -m benchmarks.engine rewrite` (the phrases' texts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import REPO_ROOT

PHRASES = REPO_ROOT / "tests" / "data" / "readings_ha.tsv"


@dataclass(frozen=True)
class Phrase:
    """One line of the phrase set."""

    line: int
    """Line number in the file (1-based)."""
    text: str
    """What Home Assistant sends."""
    expected: str
    """Text the reference frontend reads the way ``text`` should be read."""


def load_phrases(path: Path = PHRASES) -> list[Phrase]:
    """The phrases of a TSV file (``#`` lines are comments)."""
    out = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        text, sep, expected = raw.partition("\t")
        if not sep or not text or not expected or "\t" in expected:
            raise ValueError(f"{path}:{n}: expected 'text<TAB>reading', got {raw!r}")
        out.append(Phrase(n, text, expected))
    return out


def phonemes(text: str) -> tuple[str, ...]:
    """The phonemes the reference frontend gives ``text`` (えい/おう as long vowels)."""
    from engine.text import analyze

    phones = list(analyze(text).phones[1:-1])
    for i in range(1, len(phones)):
        if phones[i] == "i" and phones[i - 1] == "e":
            phones[i] = "e"
        elif phones[i] == "u" and phones[i - 1] == "o":
            phones[i] = "o"
    return tuple(phones)


def misses(phrases: list[Phrase]) -> list[tuple[Phrase, str]]:
    """The phrases that ``rewrite`` does not read as expected, with what it made of them."""
    from engine.text import rewrite

    out = []
    for p in phrases:
        got = rewrite(p.text)
        if phonemes(got) != phonemes(p.expected):
            out.append((p, got))
    return out
