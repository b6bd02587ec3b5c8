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
from pathlib import Path

from engine.aivm.manifest import AivmFileError, read_metadata
from engine.aivm.naming import model_slug
from engine.progress import StderrProgress
from engine.sources.redact import redact

from ..flags import SettingsError
from ..library.hub import HubError, HubModel, download, fetch_model
from ..library.install_file import (
    change_state,
    check_file_memory,
    check_hub_architecture,
    check_hub_memory,
    check_name,
    entry_for_file,
    library_file,
    remove_with_cache,
    safe_name,
)
from ..library.jobs import JobFailed
from ..library.memory import MemoryRefused
from ..library.options import (
    AIVISHUB_API,
    LibrarySettings,
    add_library_arguments,
    library_settings_from_args,
)
from ..library.sources import Requested, SourceRefused, parse_request
from ..library.state import (
    PARTIAL_DIR,
    STATE_FILE,
    LibraryEntry,
    LibraryState,
    StateError,
    read_state,
)
from ..logs import setup_logging

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


class Failed(Exception):
    """What failed, in one line for stderr (exit status 1)."""


class UsageError(Exception):
    """A source or name the library does not take (exit status 2)."""


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


def _partial(folder: Path, stem: str, suffix: str) -> Path:
    partial = folder / PARTIAL_DIR
    partial.mkdir(parents=True, exist_ok=True)
    return partial / f"cli-{os.getpid()}-{safe_name(stem)}{suffix}"


def _refuse_taken(state: LibraryState, name: str) -> None:
    """`Failed` when `name` is installed already, or is a voice of an installed file."""
    entry = state.find(name)
    if entry is not None:
        also = "" if entry.name.casefold() == name.casefold() else f" (it serves {name})"
        raise Failed(f"the library already has {entry.name}{also}: remove it or give another name")


def _install_file(
    file: Path, folder: Path, cache_dir: Path | None, *, kind: str, source: str, name: str | None
) -> LibraryEntry:
    """`file` (a checked copy under the folder's partial folder) moved into the library and
    listed in its state file, unless its name or a voice of it is already there."""
    meta = read_metadata(file)
    manifest = meta.manifest
    check_file_memory(manifest, file)
    base = name or model_slug(manifest)
    final = library_file(folder, base, manifest, file.suffix)
    from engine.aivm.loader import voices_of_file

    names = tuple(n for n, _ in voices_of_file(str(file), base, cache_dir=cache_dir, offline=True))
    made: list[LibraryEntry] = []

    def change(state: LibraryState) -> LibraryState:
        _refuse_taken(state, base)
        taken = {v.casefold() for v in state.voices()}
        clash = [n for n in names if n.casefold() in taken]
        if clash:
            raise JobFailed(f"a voice named {clash[0]} is already in the library: give --name")
        os.replace(file, final)
        made.append(entry_for_file(base, names, source, kind, final, manifest))
        return state.with_entry(made[0])

    try:
        change_state(folder, change)
    except BaseException:
        if made:  # moved in, but the state file was not written
            final.unlink(missing_ok=True)
        raise
    return made[0]


def _add_file(path: Path, folder: Path, cache_dir: Path | None, name: str | None) -> LibraryEntry:
    if not path.is_file():
        raise Failed(f"{path}: no such file")
    read_metadata(path)  # an unreadable file is named as the user gave it, before any copy
    copy = _partial(folder, path.stem, path.suffix.lower())
    try:
        shutil.copyfile(path, copy)
        return _install_file(
            copy, folder, cache_dir, kind="upload", source=f"upload:{path.name}", name=name
        )
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


async def _fetch_from_hub(
    requested: Requested, settings: LibrarySettings, dest_for: Callable[[HubModel], Path]
) -> tuple[HubModel, Path]:
    model = await fetch_model(
        settings.aivishub_api,
        requested.uuid,
        connect=settings.connect_timeout,
        read=settings.read_timeout,
    )
    check_hub_architecture(model)
    check_hub_memory(model)
    dest = dest_for(model)
    await download(
        settings.aivishub_api,
        model,
        dest,
        connect=settings.connect_timeout,
        read=settings.read_timeout,
        progress=_download_progress(model.name, StderrProgress()),
        cancelled=lambda: False,
    )
    return model, dest


def _add_hub(
    requested: Requested, settings: LibrarySettings, folder: Path, cache_dir: Path | None
) -> LibraryEntry:
    state = read_state(folder)
    if requested.name is not None:
        _refuse_taken(state, requested.name)
    same = [e for e in state.entries if e.uuid == requested.uuid]
    if requested.name is None and same:
        raise Failed(
            f"the library already has {same[0].name} (AivisHub model {requested.uuid}): "
            "remove it first, or give another name (--name)"
        )
    dests: list[Path] = []

    def dest_for(model: HubModel) -> Path:
        dests.append(_partial(folder, f"{model.uuid}-{model.version}", ".aivmx"))
        return dests[0]

    try:
        _, dest = asyncio.run(_fetch_from_hub(requested, settings, dest_for))
        return _install_file(
            dest, folder, cache_dir, kind="aivishub", source=requested.source, name=requested.name
        )
    finally:
        for dest in dests:
            dest.unlink(missing_ok=True)


def _add_hf(requested: Requested, folder: Path, cache_dir: Path | None) -> LibraryEntry:
    from engine import EngineOptions
    from engine.download import fetch_voice
    from engine.sources import parse_source

    name = requested.name or ""
    _refuse_taken(read_state(folder), name)
    source = parse_source(
        requested.load_source, cache_dir=cache_dir, offline=EngineOptions.from_env().offline
    )
    fetch_voice(source, name, "cpu")
    entry = LibraryEntry(
        name=name,
        voices=(name,),
        source=requested.source,
        kind="hf",
        load_source=requested.load_source,
    )

    def change(state: LibraryState) -> LibraryState:
        _refuse_taken(state, name)
        return state.with_entry(entry)

    change_state(folder, change)
    return entry


def _add(args: argparse.Namespace, settings: LibrarySettings, folder: Path) -> LibraryEntry:
    try:
        name = check_name(args.name)
    except JobFailed as exc:
        raise UsageError(str(exc)) from None
    source = str(args.source).strip()
    if _is_file_source(source):
        return _add_file(Path(source).expanduser(), folder, args.cache_dir, name)
    try:
        requested = parse_request(source, name)
    except SourceRefused as exc:
        raise UsageError(f"{exc}, or a .aivmx/.aivm file") from None
    if requested.kind == "aivishub":
        return _add_hub(requested, settings, folder, args.cache_dir)
    return _add_hf(requested, folder, args.cache_dir)


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
    except (Failed, JobFailed, HubError, AivmFileError, MemoryRefused, StateError) as exc:
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
