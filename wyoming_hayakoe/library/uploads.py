"""The room ``--library-max-upload`` gives uploads, shared by all of them: the bytes of the
uploads arriving now, counted as they arrive (one counter for all), and those of the uploads
that wait as queued jobs (`jobs.JobQueue.pending_bytes`). Six uploads begun together under a
30 MB limit share those 30 MB: the one whose bytes would pass it is refused (``too_large``)
while it arrives, not each checked against the room left when it began.

Each upload holds a `Reservation`, grown by `Reservation.take` as its bytes arrive and given
back by `Reservation.release` when the upload ends in any way (refused, failed, cut off, or
handed to the queue, which counts its file from then on). Called on the event loop only."""

from __future__ import annotations

import logging
from collections.abc import Callable

from .errors import Code, LibraryError

__all__ = ["Reservation", "UploadRoom"]

_LOGGER = logging.getLogger(__name__)

_MB = 1024 * 1024


class UploadRoom:
    """`limit` bytes for the uploads arriving and those `held` by queued jobs."""

    def __init__(self, limit: int, held: Callable[[], int]) -> None:
        self.limit = limit
        self._held = held
        self._arriving = 0

    @property
    def arriving(self) -> int:
        """Bytes of the uploads arriving now (reserved)."""
        return self._arriving

    def used(self) -> int:
        """Bytes counted against the limit now: arriving plus held by queued jobs."""
        return self._arriving + self._held()

    def reserve(self, filename: str) -> Reservation:
        """A reservation for the upload of `filename` (nothing taken yet); ``queue_full``
        when the uploads arriving and waiting leave no room at all."""
        if self.used() >= self.limit:
            raise LibraryError(
                Code.QUEUE_FULL,
                f"{filename}: uploads arriving and waiting fill the library's room "
                f"({self.limit // _MB} MB, --library-max-upload): try again when they end",
                "file",
            )
        return Reservation(self, filename)

    def _take(self, reservation: Reservation, size: int) -> None:
        used = self.used()
        if used + size > self.limit:
            others = used - reservation.size
            if reservation.size + size > self.limit or others <= 0:
                why = f"larger than the {self.limit // _MB} MB the library takes"
            else:
                why = (
                    f"with the other uploads arriving or waiting ({others / _MB:.1f} MB) it "
                    f"would pass the {self.limit // _MB} MB the library takes; try again "
                    "when they end"
                )
            raise LibraryError(
                Code.TOO_LARGE, f"{reservation.filename}: {why} (--library-max-upload)", "file"
            )
        self._arriving += size
        reservation.size += size

    def _give_back(self, size: int) -> None:
        self._arriving -= size
        if self._arriving < 0:  # a bug: never below nothing
            _LOGGER.error("Upload room: %d bytes given back twice", -self._arriving)
            self._arriving = 0


class Reservation:
    """One upload's bytes counted against the room (`UploadRoom.reserve`)."""

    def __init__(self, room: UploadRoom, filename: str) -> None:
        self._room = room
        self.filename = filename
        self.size = 0
        """Bytes taken so far."""
        self._released = False

    def take(self, size: int) -> None:
        """Count `size` more bytes of this upload; ``too_large`` (nothing counted) when the
        uploads arriving and waiting would pass the limit with them."""
        if self._released:
            raise RuntimeError("Reservation.take after release")
        self._room._take(self, size)

    def release(self) -> None:
        """Give the bytes back (the upload ended); a second call does nothing."""
        if not self._released:
            self._released = True
            self._room._give_back(self.size)
