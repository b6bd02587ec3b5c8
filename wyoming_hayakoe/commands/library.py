"""`wyoming-hayakoe library`: list, add and remove the voices of a voice library folder
without the page (Docker users, scripts), with the same state file, lock and checks as the
page's installs (`wyoming_hayakoe.library`)::

    wyoming-hayakoe library list [--json]
    wyoming-hayakoe library add https://hub.aivis-project.com/aivm-models/<uuid>
    wyoming-hayakoe library add ./my-voice.aivmx --name mine
    wyoming-hayakoe library remove mine

Meant for a stopped server: the folder is found as the server finds it (`--library-dir`,
else ``<cache root>/library``, the cache root from `--cache-dir`, else ``$HAYAKOE_CACHE``),
and the next start loads what is listed. A server running on the same folder follows a change
within seconds (it watches the state file, as replicas sharing a folder do).

An AivisHub voice is fetched through the API (`--aivishub-api`), its architecture checked
before the download, its size and SHA-256 while it streams (progress on stderr); a file is
checked (an AivisHub voice file, a JP-Extra model) and copied in; the memory guard counts this
machine's free memory (a stopped server's other voices cannot be counted). An official voice
or an ``hf://`` voice is fetched into the cache (the CPU files), so the server starts with no
network.

Exit status: 0 done, 1 failed (one line on stderr naming the cause; nothing left behind), 2
bad arguments (a source the library does not take, a bad name), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from engine.aivm import AivmFileError, read_metadata
from engine.progress import StderrProgress
from engine.sources.cache import CacheDir
from engine.sources.redact import redact

from ..errors import HayakoeError
from ..flags import SettingsError
from ..library.errors import Code, LibraryError
from ..library.fetch import partial_file
from ..library.files import remove_with_cache
from ..library.install import Plan, install
from ..library.jobs import JobState
from ..library.naming import check_name
from ..library.options import (
    AIVISHUB_API,
    LibrarySettings,
    add_library_arguments,
    library_settings_from_args,
)
from ..library.sources import parse_request
from ..library.state import (
    STATE_FILE,
    LibraryEntry,
    LibraryState,
    StateError,
    change_state,
    read_state,
)
from ..logs import setup_logging
from .errors import UsageError

_LOGGER = logging.getLogger(__name__)

PROG = "wyoming-hayakoe library"
EXIT_STATUS = {
    0: "done",
    1: "failed (one line on stderr says what; nothing is left behind)",
    2: "bad arguments (a source the library does not take, a bad name)",
}
_FILE_SUFFIXES = (".aivmx", ".aivm")
_PROGRESS_STEPS = 20
"""Download progress lines per file (every 5 %)."""


class Failed(HayakoeError):
    """What failed, in one line for stderr (exit status 1)."""


def _common(p: argparse.ArgumentParser, *, hidden: bool) -> None:
    """The folder and hub flags, on the command and again on each action (so they may come
    before or after it); an action's copies leave the command's values alone unless given."""

    def add(*names: str, **kwargs: object) -> None:
        if hidden:
            kwargs["default"] = argparse.SUPPRESS
            kwargs["help"] = argparse.SUPPRESS
        p.add_argument(*names, **kwargs)  # type: ignore[arg-type]

    add(
        "--library-dir",
        type=Path,
        default=None,
        metavar="PATH",
        help="folder of the voices installed from the page, the API or `wyoming-hayakoe "
        "library`, and of its state file; replicas may share it "
        "(default: <cache root>/library)",
    )
    add(
        "--cache-dir",
        type=Path,
        default=None,
        help="where downloaded voices are kept (default: $HAYAKOE_CACHE or the user cache)",
    )
    add(
        "--aivishub-api",
        default=AIVISHUB_API,
        metavar="URL",
        help="AivisHub's API, the only host besides Hugging Face voices are fetched from "
        f"(default: {AIVISHUB_API})",
    )
    add(
        "--aivishub-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds to connect to the hub, and six times that without a byte while "
        "downloading (default: 10.0)",
    )
    add("--debug", action="store_true", default=False, help="debug logging")


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (also read by the configuration reference)."""
    statuses = "; ".join(f"{code} {meaning}" for code, meaning in EXIT_STATUS.items())
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "List, add and remove the voices of a stopped server's voice library (the folder "
            "the page installs into), with the page's checks; the next start serves them. A "
            "server running on the same folder follows a change within seconds (it watches "
            "the state file)."
        ),
        epilog=f"Exit status: {statuses}.",
    )
    _common(parser, hidden=False)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list", help="the installed voices: name, voices, version, source, size"
    )
    listing.add_argument("--json", action="store_true", help="as JSON, for scripts")
    add = actions.add_parser(
        "add",
        help="add a voice (AivisHub voices and files: every speaker is a voice)",
    )
    add.add_argument(
        "source",
        metavar="SOURCE",
        help="an AivisHub page URL (https://hub.aivis-project.com/aivm-models/<uuid>) or model "
        "UUID, an official hayakoe voice (jvnv-F1-jp, ...), hf://USER/REPO (with --name: the "
        "voice's folder in it), or a .aivmx/.aivm file",
    )
    add.add_argument(
        "--name",
        metavar="NAME",
        help="the name to install it under (a file with several speakers: their prefix; "
        "default: from the file's manifest)",
    )
    remove = actions.add_parser(
        "remove", help="remove a voice (all speakers of its file) with its files in the cache"
    )
    remove.add_argument(
        "name", metavar="NAME", help="the name it was installed under, or one of its voices"
    )
    for sub in (listing, add, remove):
        _common(sub, hidden=True)
    return parser


# -- list ---------------------------------------------------------------------------------


def _size(entry: LibraryEntry) -> str:
    return f"{entry.size / 2**20:.1f} MB" if entry.size else "-"


def list_text(state: LibraryState) -> str:
    """The installed voices as a table (name, voices, version, source, size)."""
    rows = [("NAME", "VOICES", "VERSION", "SOURCE", "SIZE")]
    for e in state.entries:
        rows.append((e.name, ",".join(e.voices), e.version or "-", e.source, _size(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:4])) + "  " + r[4] for r in rows
    )


def _list(folder: Path, as_json: bool) -> None:
    state = read_state(folder)
    if as_json:
        data = {"folder": str(folder), "installed": [e.as_json() for e in state.entries]}
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif state.entries:
        print(list_text(state))
    else:
        print(f"No voices in the library {folder}", file=sys.stderr)


# -- add ----------------------------------------------------------------------------------


def _is_file_source(source: str) -> bool:
    """A file path: ends in .aivmx/.aivm, or names a file through a folder (not a bare word
    that could be a voice's name or a UUID)."""
    if "://" in source:
        return False
    return source.lower().endswith(_FILE_SUFFIXES) or (
        os.sep in source and Path(source).expanduser().is_file()
    )


class _Folder:
    """`install.Host` on a stopped server's folder: the state file is the list; a file needs
    nothing more once verified, a Hugging Face voice is fetched into the cache."""

    def __init__(self, folder: Path, cache_dir: Path | None) -> None:
        self._folder = folder
        self._cache_dir = cache_dir
        self._lock = asyncio.Lock()

    @property
    def folder(self) -> Path:
        return self._folder

    @property
    def cache_dir(self) -> CacheDir:
        return self._cache_dir

    def changing(self) -> AbstractAsyncContextManager[None]:
        return self._lock

    def entries(self) -> LibraryState:
        return read_state(self._folder)

    def configured(self) -> Sequence[str]:
        return ()  # a stopped server: its configuration is not known here

    async def load(
        self, pairs: list[tuple[str, str]], replace: LibraryEntry | None, report: object
    ) -> None:
        for name, source in pairs:
            if Path(source.split("#", 1)[0]).parent != self._folder:
                await asyncio.to_thread(self._fetch_voice, name, source)

    def _fetch_voice(self, name: str, source: str) -> None:
        from engine import EngineOptions
        from engine.download import fetch_voice
        from engine.sources import parse_source

        offline = EngineOptions.from_env().offline
        fetch_voice(parse_source(source, cache_dir=self._cache_dir, offline=offline), name, "cpu")

    async def unload(self, entry: LibraryEntry, voices: Sequence[str]) -> None:
        return None

    def committed(self, entry: LibraryEntry) -> None:
        return None


class _Progress:
    """The CLI's `jobs.Report`: download progress on stderr."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self._out = out
        self._line: Callable[[int, int | None], None] | None = None
        self.label = "the voice"

    def fetching(self, what: str) -> None:
        self.label = what

    def move(self, state: JobState) -> None:
        if state is JobState.DOWNLOADING:
            self._line = _download_progress(self.label, self._out)

    def progress(self, done: int, total: int | None) -> None:
        if self._line is not None:
            self._line(done, total)


def _run_install(
    plan: Plan,
    settings: LibrarySettings,
    folder: Path,
    cache_dir: Path | None,
    upload: tuple[Path, str] | None = None,
) -> LibraryEntry:
    entry = asyncio.run(
        install(plan, _Folder(folder, cache_dir), _Progress(StderrProgress()), settings, upload)
    )
    if entry is None:  # only an update finds nothing newer
        raise Failed(f"{plan.source}: nothing to install")
    return entry


def _add_file(
    path: Path, settings: LibrarySettings, folder: Path, cache_dir: Path | None, name: str | None
) -> LibraryEntry:
    if not path.is_file():
        raise Failed(f"{path}: no such file")
    try:  # an unreadable file is named as the user gave it, before any copy
        read_metadata(path)
    except AivmFileError as exc:
        raise LibraryError(Code.FILE_INVALID, str(exc), "file") from None
    copy = partial_file(folder, path.name)
    try:
        shutil.copyfile(path, copy)
        plan = Plan("upload", f"upload:{path.name}", name)
        return _run_install(plan, settings, folder, cache_dir, (copy, str(path)))
    finally:
        copy.unlink(missing_ok=True)


def _download_progress(name: str, out: Callable[[str], None]) -> Callable[[int, int | None], None]:
    """A line on `out` every 5 % of the download (`StderrProgress` draws it as a bar on a
    terminal), in MB (KB for a file under 10 MB)."""
    shown = {"step": -1}

    def progress(done: int, total: int | None) -> None:
        if not total:
            return
        step = min(_PROGRESS_STEPS, done * _PROGRESS_STEPS // total)
        if step != shown["step"]:
            shown["step"] = step
            unit, scale = ("MB", 2**20) if total >= 10 * 2**20 else ("KB", 2**10)
            out(f"Downloading {name} {done // scale}/{max(1, total // scale)} {unit}")

    return progress


def _add(args: argparse.Namespace, settings: LibrarySettings, folder: Path) -> LibraryEntry:
    try:
        name = check_name(args.name) if args.name is not None else None
        source = str(args.source).strip()
        if _is_file_source(source):
            return _add_file(Path(source).expanduser(), settings, folder, args.cache_dir, name)
        requested = parse_request(source, name)
    except LibraryError as exc:
        if exc.code in (Code.NAME_INVALID, Code.SOURCE_INVALID):
            extra = ", or a .aivmx/.aivm file" if exc.code is Code.SOURCE_INVALID else ""
            raise UsageError(f"{exc}{extra}") from None
        raise
    plan = Plan(
        requested.kind, requested.source, requested.name, requested.uuid, requested.load_source
    )
    return _run_install(plan, settings, folder, args.cache_dir)


# -- remove -------------------------------------------------------------------------------


def _remove(name: str, folder: Path, cache_dir: Path | None) -> LibraryEntry:
    found: list[LibraryEntry] = []

    def change(state: LibraryState) -> LibraryState:
        entry = state.find(name.strip())
        if entry is None:
            raise Failed(f"{name} is not in the library {folder}")
        found.append(entry)
        return state.without(entry.name)

    if not (folder / STATE_FILE).is_file():
        raise Failed(f"{name} is not in the library {folder} (it has no voices)")
    change_state(folder, change)
    entry = found[0]
    if entry.file:
        remove_with_cache(folder / entry.file, cache_dir)
    return entry


# -- the command --------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> LibrarySettings:
    """The server's `LibrarySettings` for these flags: its parser's defaults for the rest, and
    its checks (`--aivishub-api`)."""
    server = argparse.ArgumentParser(add_help=False)
    add_library_arguments(server)
    values = server.parse_args([])
    values.library_dir = args.library_dir
    values.aivishub_api = args.aivishub_api
    values.aivishub_timeout = args.aivishub_timeout
    return library_settings_from_args(values)


def _os_error(exc: OSError, folder: Path) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk holding {folder} is full"
    if exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def main(argv: Sequence[str]) -> int:
    """Run the command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(list(argv))
    setup_logging(args.debug, level=logging.ERROR)  # one line on failure; --debug: all
    if not args.debug:  # a Hugging Face voice's download, file by file
        logging.getLogger("engine.sources").setLevel(logging.INFO)
    try:
        if not args.aivishub_timeout > 0:
            raise SettingsError(f"--aivishub-timeout must be > 0, got {args.aivishub_timeout:g}")
        settings = _settings(args)
    except SettingsError as exc:
        print(f"library: {exc}", file=sys.stderr)
        return 2
    folder = settings.folder_for(args.cache_dir)
    try:
        if args.action == "list":
            _list(folder, args.json)
        elif args.action == "add":
            entry = _add(args, settings, folder)
            print(f"Added {entry.name} to {folder}: {', '.join(entry.voices)}")
        else:
            entry = _remove(args.name, folder, args.cache_dir)
            print(f"Removed {entry.name} from {folder}: {', '.join(entry.voices)}")
    except UsageError as exc:
        print(f"library: {exc}", file=sys.stderr)
        return 2
    except (Failed, LibraryError, StateError) as exc:
        print(f"library: {redact(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("library: interrupted; nothing was added", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"library: {redact(_os_error(exc, folder))}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a script gets one line, not a traceback
        _LOGGER.debug("Failed", exc_info=True)
        print(f"library: {type(exc).__name__}: {redact(str(exc))}", file=sys.stderr)
        return 1
    return 0
