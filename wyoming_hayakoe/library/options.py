"""The library's flags → `LibrarySettings` (like `web.options` for the page)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ..flags import SettingsError, non_negative_float, positive_float, positive_int

__all__ = [
    "AIVISHUB_API",
    "DEFAULT_MAX_UPLOAD_MB",
    "DEFAULT_UPDATE_CHECK_HOURS",
    "LibraryConfig",
    "LibrarySettings",
    "add_library_arguments",
    "library_settings_from_args",
]

AIVISHUB_API = "https://api.aivis-project.com/v1"
"""AivisHub's API (AivisSpeech Engine's client uses it); `--aivishub-api` points elsewhere."""
DEFAULT_MAX_UPLOAD_MB = 2048
"""Largest `.aivmx`/`.aivm` accepted from the page (a full-size `.aivmx` is about 250 MB)."""
DEFAULT_UPDATE_CHECK_HOURS = 24.0
"""How often AivisHub is asked for newer versions of the installed AivisHub voices."""


@dataclass(frozen=True)
class LibrarySettings:
    """Where installed voices live and where they may come from."""

    folder: Path | None = None
    """The library folder; None: ``<cache root>/library`` (`engine.sources.cache_root`)."""
    enabled: bool = True
    aivishub_api: str = AIVISHUB_API
    connect_timeout: float = 10.0
    """Seconds to reach the hub (AivisSpeech's 10 s)."""
    read_timeout: float = 60.0
    """Seconds without a byte from the hub before a download fails."""
    max_upload: int = DEFAULT_MAX_UPLOAD_MB * 1024 * 1024
    """Bytes."""
    update_check_hours: float = DEFAULT_UPDATE_CHECK_HOURS
    """Hours between checks for newer versions of installed AivisHub voices (the first at
    start); 0: only when the page asks (``GET /api/library?check=1``)."""

    def folder_for(self, cache_dir: Path | None) -> Path:
        if self.folder is not None:
            return self.folder
        from engine.sources import cache_root

        return cache_root(cache_dir) / "library"


@dataclass(frozen=True)
class LibraryConfig:
    """What a running `manager.Library` needs of the server's settings, and no more."""

    folder: Path
    cache_dir: Path | None
    options: LibrarySettings
    warmup: bool = False
    """Warm a new voice up before it is listed."""
    drain_timeout: float = 30.0
    """Seconds a removed or replaced voice's requests are waited for."""


def add_library_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("voice library (voices installed while the server runs)")
    g.add_argument(
        "--library-dir",
        type=Path,
        default=None,
        metavar="PATH",
        help="folder of the voices installed from the page, the API or `wyoming-hayakoe "
        "library`, and of its state file; replicas may share it "
        "(default: <cache root>/library)",
    )
    g.add_argument(
        "--library",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="load the library's voices at start and let the page install and remove voices "
        "(default: on)",
    )
    g.add_argument(
        "--aivishub-api",
        default=AIVISHUB_API,
        metavar="URL",
        help="AivisHub's API, the only host besides Hugging Face voices are fetched from "
        "(default: %(default)s)",
    )
    g.add_argument(
        "--aivishub-timeout",
        type=positive_float("--aivishub-timeout"),
        default=10.0,
        metavar="SECONDS",
        help="seconds to connect to the hub, and six times that without a byte while "
        "downloading (default: %(default)s)",
    )
    g.add_argument(
        "--library-max-upload",
        type=positive_int("--library-max-upload"),
        default=DEFAULT_MAX_UPLOAD_MB,
        metavar="MB",
        help="largest voice file the page accepts as an upload (default: %(default)s)",
    )
    g.add_argument(
        "--library-update-check",
        type=non_negative_float("--library-update-check"),
        default=DEFAULT_UPDATE_CHECK_HOURS,
        metavar="HOURS",
        help="ask AivisHub for newer versions of the installed AivisHub voices at start and "
        "then every HOURS hours, so the page offers an update; 0: only when the page asks "
        "(default: %(default)s)",
    )


def library_settings_from_args(args: argparse.Namespace) -> LibrarySettings:
    api = str(args.aivishub_api).strip().rstrip("/")
    if not api.startswith(("http://", "https://")):
        raise SettingsError(f"--aivishub-api {args.aivishub_api!r}: give an http(s) URL")
    return LibrarySettings(
        folder=args.library_dir,
        enabled=bool(args.library),
        aivishub_api=api,
        connect_timeout=float(args.aivishub_timeout),
        read_timeout=6 * float(args.aivishub_timeout),
        max_upload=int(args.library_max_upload) * 1024 * 1024,
        update_check_hours=float(args.library_update_check),
    )
