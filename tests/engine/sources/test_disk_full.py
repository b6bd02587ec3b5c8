"""`engine.sources.is_disk_full`: the one classification of "no room to write"."""

from __future__ import annotations

import errno

from engine.sources import DISK_FULL_ERRNOS, CacheWriteError, is_disk_full


def test_a_full_disk_is_known_directly_and_through_its_causes() -> None:
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        assert code in DISK_FULL_ERRNOS
        assert is_disk_full(OSError(code, "no room"))
    assert is_disk_full(CacheWriteError(errno.ENOSPC, "/cache", "No space left on device"))
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise RuntimeError("the upload failed") from exc
    except RuntimeError as wrapped:
        assert is_disk_full(wrapped)
    assert not is_disk_full(OSError(errno.EACCES, "denied"))
    assert not is_disk_full(CacheWriteError(errno.EROFS, "/cache", "read-only"))
    assert not is_disk_full(ValueError("nothing to do with disks"))
    a, b = ValueError("a"), ValueError("b")
    a.__context__, b.__context__ = b, a  # a cycle ends the walk
    assert not is_disk_full(a)
