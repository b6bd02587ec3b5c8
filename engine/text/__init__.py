"""Japanese text frontend: sentence splitting, reference-exact analysis, rewriting.

Importing this package is cheap (the server imports it): modules that need pyopenjtalk are
imported on first use of the names that need them.

- :func:`split_sentences`, :class:`SentenceSplitter` — sentence splitting for streaming.
- :func:`analyze` → :class:`Analysis` — reference-exact normaliser + g2p + ids
  (``r.with_blanks()`` for the blank-interspersed ids, ``r.bert_text`` for BERT).
- :func:`rewrite` — the "beyond the reference" pass run before :func:`analyze` (times,
  dates, units, signs, Latin words; leaves user-dictionary words alone).
- :func:`add_word`, :func:`load_user_dictionary`, :func:`clear_user_dictionary`,
  :class:`UserDictionary` — the process-wide user dictionary (OpenJTalk user dictionary).
- :func:`watch_user_dictionaries`, :func:`refresh_user_dictionary`,
  :func:`reload_user_dictionary`, :func:`check_user_dictionary` — dictionary files kept in
  step with the disk (reload on change between requests, and on demand).
- :class:`TextPipeline`, :class:`Part`, :func:`sentences_of` — one request's text, whole or
  in deltas, to the parts a voice renders (:mod:`engine.text.pipeline`).
- :func:`is_ssml`, :func:`parse_ssml` — the SSML subset (:mod:`engine.text.ssml`).
- :func:`normalize_text` — the first half of :func:`analyze` (``engine.text.g2p.g2p`` is
  the second).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .splitter import SentenceSplitter, split_sentences

if TYPE_CHECKING:  # for the type checker only: at run time `__getattr__` imports them
    from .analysis import Analysis, analyze
    from .normalizer import normalize_text
    from .pipeline import Part, Readings, TextPipeline, sentences_of
    from .rewriter import rewrite
    from .ssml import is_ssml, parse_ssml
    from .userdict import (
        UserDictionary,
        UserDictionaryError,
        UserWord,
        add_word,
        clear_user_dictionary,
        load_user_dictionary,
    )
    from .userdict_watch import (
        check_user_dictionary,
        refresh_user_dictionary,
        reload_user_dictionary,
        unwatch_user_dictionaries,
        watch_user_dictionaries,
    )

__all__ = [
    "Analysis",
    "Part",
    "Readings",
    "SentenceSplitter",
    "TextPipeline",
    "UserDictionary",
    "UserDictionaryError",
    "UserWord",
    "add_word",
    "analyze",
    "check_user_dictionary",
    "clear_user_dictionary",
    "is_ssml",
    "load_user_dictionary",
    "normalize_text",
    "parse_ssml",
    "refresh_user_dictionary",
    "reload_user_dictionary",
    "rewrite",
    "sentences_of",
    "split_sentences",
    "unwatch_user_dictionaries",
    "watch_user_dictionaries",
]

# name -> submodule that defines it; imported lazily (pyopenjtalk is slow to import).
_LAZY: dict[str, str] = {
    "analyze": "analysis",
    "Analysis": "analysis",
    "rewrite": "rewriter",
    "add_word": "userdict",
    "load_user_dictionary": "userdict",
    "clear_user_dictionary": "userdict",
    "UserDictionary": "userdict",
    "UserDictionaryError": "userdict",
    "UserWord": "userdict",
    "normalize_text": "normalizer",
    "watch_user_dictionaries": "userdict_watch",
    "unwatch_user_dictionaries": "userdict_watch",
    "refresh_user_dictionary": "userdict_watch",
    "reload_user_dictionary": "userdict_watch",
    "check_user_dictionary": "userdict_watch",
    "is_ssml": "ssml",
    "TextPipeline": "pipeline",
    "Part": "pipeline",
    "Readings": "pipeline",
    "sentences_of": "pipeline",
    "parse_ssml": "ssml",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
