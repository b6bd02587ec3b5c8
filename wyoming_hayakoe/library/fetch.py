"""The fetchers: an AivisHub model's facts (*contacting*: its architecture and the memory
guard checked from them before a byte of the file) and its file (*downloading*, into the
library's partial folder); an upload arrives there through the page (`partial_file`); a
Hugging Face voice is fetched by the engine when it loads (`install`)."""

from __future__ import annotations

import logging
import os
import uuid as uuidlib
from pathlib import Path

from .errors import Code, LibraryError
from .hub import HubModel, download, fetch_model
from .jobs import JobState, Report
from .memory import HOLD_FACTOR, MemoryRefused, available_bytes, check_fits
from .options import LibrarySettings
from .state import PARTIAL_DIR

__all__ = ["check_hub_model", "contact_hub", "download_hub", "partial_file"]

_LOGGER = logging.getLogger(__name__)


def partial_file(folder: Path, label: str) -> Path:
    """A new file in `folder`'s partial folder for a download or an upload (a name no other
    process picks: pid and a random part); removed when its install ends, and at the next
    start when a process was killed."""
    partial = folder / PARTIAL_DIR
    partial.mkdir(parents=True, exist_ok=True)
    suffix = ".aivm" if label.lower().endswith(".aivm") else ".aivmx"
    return partial / f"{os.getpid()}-{uuidlib.uuid4().hex[:12]}{suffix}"


def check_hub_model(model: HubModel, available: int | None = None) -> None:
    """What the hub's facts allow checking before the download: the architecture, and the
    memory guard from the declared size (`available`: free bytes, default measured)."""
    arch = model.architecture.replace("-", "").replace("_", "").lower()
    if arch and "jpextra" not in arch:
        raise LibraryError(
            Code.NOT_SUPPORTED,
            f"AivisHub model {model.name} is a {model.architecture} model; only "
            "Style-Bert-VITS2 JP-Extra voices are served",
            "source",
        )
    if model.file_size is not None:
        free = available_bytes() if available is None else available
        try:
            check_fits(model.name, int(model.file_size * HOLD_FACTOR), free)
        except MemoryRefused as exc:
            raise LibraryError(Code.MEMORY, str(exc)) from None


async def contact_hub(uuid: str, options: LibrarySettings, report: Report) -> HubModel:
    """The model's facts, checked (*contacting*)."""
    report.move(JobState.CONTACTING)
    model = await fetch_model(
        options.aivishub_api, uuid, connect=options.connect_timeout, read=options.read_timeout
    )
    check_hub_model(model)
    return model


async def download_hub(
    model: HubModel, dest: Path, options: LibrarySettings, report: Report
) -> None:
    """The model's file into `dest` (*downloading*), bounded by the declared size, else by
    the largest file the library takes (`max_upload`)."""
    report.fetching(model.name)
    report.move(JobState.DOWNLOADING)
    await download(
        options.aivishub_api,
        model,
        dest,
        connect=options.connect_timeout,
        read=options.read_timeout,
        progress=report.progress,
        max_bytes=options.max_upload,
    )
