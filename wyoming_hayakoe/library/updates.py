"""Newer versions on AivisHub: the newest version of each installed AivisHub model, asked
for at start, every ``--library-update-check`` hours, and when the page asks (``?check=1``,
at most once per `PAGE_CHECK_INTERVAL_S`: a page polling it sends the hub no more)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable, Sequence

from . import hub as _hub
from .hub import HubModel, fetch_model
from .options import LibrarySettings
from .semver import is_newer
from .state import LibraryEntry

__all__ = ["CHECK_WAIT_S", "PAGE_CHECK_INTERVAL_S", "UpdateChecker"]

_LOGGER = logging.getLogger(__name__)

CHECK_WAIT_S = 10.0
"""How long a listing asked to check for updates waits for the hub; a slower check goes on
and the next listing shows what it found."""
PAGE_CHECK_INTERVAL_S = 2.0

_QUIET_HUB = contextvars.ContextVar("library_update_check", default=False)


class _QuietHubTries(logging.Filter):
    """The hub client's warning per failed try, left out inside an update check (which logs
    one line for the whole check): a check is asked again later, an install is not."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _QUIET_HUB.get()


_hub_logger = logging.getLogger(_hub.__name__)
if not any(isinstance(f, _QuietHubTries) for f in _hub_logger.filters):
    _hub_logger.addFilter(_QuietHubTries())


class UpdateChecker:
    def __init__(
        self,
        options: LibrarySettings,
        entries: Callable[[], list[LibraryEntry]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self._entries = entries
        self._clock = clock
        self.latest: dict[str, str] = {}
        """AivisHub's newest version of each installed AivisHub model, by UUID (as last
        asked: a model the hub did not answer for is left out)."""
        self._check: asyncio.Task[None] | None = None
        self._page_asked: float | None = None

    def latest_for(self, entry: LibraryEntry) -> str | None:
        return self.latest.get(entry.uuid) if entry.kind == "aivishub" else None

    def seen(self, model: HubModel) -> None:
        if model.version:
            self.latest[model.uuid] = model.version

    async def check(self, wait: float | None = None, *, page: bool = False) -> None:
        """Ask AivisHub for the newest version of every installed AivisHub model (one check
        at a time: a second caller joins the one running; `page`: at most once per
        `PAGE_CHECK_INTERVAL_S`, else the last answers stand); `wait`: seconds to wait for
        it at most (it goes on after). Never raises for the hub."""
        if page:
            now = self._clock()
            if self._page_asked is not None and now - self._page_asked < PAGE_CHECK_INTERVAL_S:
                return
            self._page_asked = now
        if self._check is None or self._check.done():
            self._check = asyncio.create_task(self._check_once(), name="library-update-check")
        await asyncio.wait({self._check}, timeout=wait)

    async def often(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.options.update_check_hours * 3600)

    async def close(self) -> None:
        if self._check is not None:
            self._check.cancel()
            await asyncio.wait({self._check})

    async def _check_once(self) -> None:
        _QUIET_HUB.set(True)  # this task's context only: installs keep their warnings
        entries = [e for e in self._entries() if e.kind == "aivishub" and e.uuid]
        uuids = sorted({e.uuid for e in entries})
        if not uuids:
            return
        o = self.options
        answers = await asyncio.gather(
            *(fetch_model(o.aivishub_api, u, connect=o.connect_timeout, read=o.read_timeout)
              for u in uuids),
            return_exceptions=True,
        )  # fmt: skip
        failed = self._take(uuids, answers, entries)
        if failed:
            _LOGGER.warning(
                "AivisHub update check: no answer for %s; no update is shown for %s",
                "; ".join(failed),
                "it" if len(failed) == 1 else "them",
            )
        newer = [
            f"{e.name} {e.version} → {self.latest[e.uuid]}"
            for e in entries
            if e.uuid in self.latest and is_newer(self.latest[e.uuid], e.version)
        ]
        if newer:
            _LOGGER.info("AivisHub has newer versions: %s", ", ".join(newer))

    def _take(
        self, uuids: list[str], answers: Sequence[object], entries: list[LibraryEntry]
    ) -> list[str]:
        """The hub's answers kept; the models it did not answer for, named."""
        failed: list[str] = []
        for uuid, answer in zip(uuids, answers, strict=True):
            if isinstance(answer, HubModel) and answer.version:
                self.latest[uuid] = answer.version
                continue
            self.latest.pop(uuid, None)
            if isinstance(answer, BaseException) and not isinstance(answer, Exception):
                raise answer  # cancelled
            names = ", ".join(e.name for e in entries if e.uuid == uuid)
            cause = answer if isinstance(answer, Exception) else "no version given"
            failed.append(f"{names} ({cause})")
        return failed
