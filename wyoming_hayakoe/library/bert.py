"""What a library voice needs besides its own file: the shared BERT (defect 16 of issue 46;
issue 54 finding 15 online).

Every voice the library installs is a neural voice, and the first one a server loads needs
the shared BERT model (about 500 MB), fetched from ``--bert-source`` into the cache. Online,
the first install fetches it while it loads. Offline (``--offline``) it can only come from
the cache, so an install is refused at once, before any byte is fetched or uploaded, with a
sentence that says what is missing and how to get it (``bert_missing``), instead of failing
after the download. Online, a load that failed because the BERT could not be fetched is
said so too (`unavailable`: ``bert_missing``, not ``load_failed``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from engine.download import fetch_bert
from engine.sources import parse_source, redact
from engine.sources.cache import cache_root

from .errors import Code, LibraryError

if TYPE_CHECKING:
    from engine import TTS

__all__ = ["BertCheck"]

_LOGGER = logging.getLogger(__name__)


class BertCheck:
    """Whether `tts` can load a neural voice now; once it can, it is not asked again."""

    def __init__(self, tts: TTS) -> None:
        self._tts = tts
        self._ready = False

    def _at_hand(self) -> bool:
        """Whether a neural voice can get the shared BERT: a neural voice is served, or the
        BERT is in the cache or its folder (looked for once it is, then remembered)."""
        tts = self._tts
        if self._ready or any(s.run_info is not None for s in tts.speakers.values()):
            self._ready = True
            return True
        try:
            source = parse_source(tts.bert_source, cache_dir=tts.cache_dir, offline=True)
            fetch_bert(source, tts.device)
        except Exception as exc:  # noqa: BLE001 - whatever it is, the BERT cannot be had
            _LOGGER.debug("BERT not at hand: %s", exc)
            return False
        self._ready = True
        return True

    def _needs(self, why: str, advice: str) -> str:
        tts = self._tts
        where, root = redact(tts.bert_source), cache_root(tts.cache_dir)
        return (
            f"the first neural voice needs the shared BERT model (about 500 MB, from "
            f"{where}), which {why} ({root}){advice}, or fetch it first with "
            f"`wyoming-hayakoe download --cache-dir {root} --bert-source {where}`"
        )

    def missing(self) -> str | None:
        """None when a neural voice can be loaded (online, a neural voice served, or the
        BERT in the cache or a local folder); else the sentence that says why not."""
        if self._ready or not self._tts.options.offline or self._at_hand():
            return None
        return self._needs(
            "is not in the cache",
            " and the server is offline (--offline): start it once online",
        )

    def unavailable(self, cause: str) -> str | None:
        """After a neural voice failed to load (`cause`): the sentence saying the shared
        BERT could not be had (no neural voice serves and it is not in the cache or its
        folder, so the load needed it and it could not be fetched), or None."""
        if self._at_hand():
            return None
        return self._needs(
            f"could not be fetched ({cause}) and is not in the cache", ": check the network"
        )

    def check(self) -> None:
        """`LibraryError` ``bert_missing`` when `missing` says why an install cannot work."""
        why = self.missing()
        if why is not None:
            raise LibraryError(Code.BERT_MISSING, why)
