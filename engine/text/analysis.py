"""``analyze``: text → normalised text, phones, tones, word2ph and model ids (reference-exact).

The result's attribute names follow the golden file (``tests/data/frontend_golden.jsonl``)
so the model side and the checks can rely on them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

from .g2p import g2p
from .normalizer import normalize_text
from .symbols import JP_LANG_ID, JP_TONE_START, SYMBOL_TO_ID

__all__ = ["Analysis", "analyze"]

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Analysis:
    """Frontend output for one text.

    ``phones``/``tones`` include the ``_`` at both ends; ``word2ph[i]`` is the number of
    phones of BERT token ``i`` (``[CLS]``, one per character of ``bert_text``, ``[SEP]``),
    so ``sum(word2ph) == len(phone_ids)`` and ``len(word2ph) == len(bert_text) + 2``.
    After :meth:`with_blanks` the ids have a blank (id 0, tone 0, language 0) between and
    around all phones, ``word2ph`` is doubled with ``+1`` on its first entry, and
    ``blanks`` is True.
    """

    text: str
    norm_text: str
    phones: list[str]
    tones: list[int]
    word2ph: list[int]
    phone_ids: list[int]
    tone_ids: list[int]
    lang_ids: list[int]
    bert_text: str
    """OpenJTalk's word strings after punctuation mapping, joined: the text BERT reads."""
    exact: bool = True
    """False when the reference would have raised and a fallback reading was produced."""
    blanks: bool = field(default=False)

    def with_blanks(self) -> Analysis:
        """The blank-interspersed form the JP-Extra model reads (``add_blank=true``)."""
        if self.blanks:
            return self
        word2ph = [2 * w for w in self.word2ph]
        if word2ph:
            word2ph[0] += 1
        return replace(
            self,
            phone_ids=_intersperse(self.phone_ids),
            tone_ids=_intersperse(self.tone_ids),
            lang_ids=_intersperse(self.lang_ids),
            word2ph=word2ph,
            blanks=True,
        )


def _intersperse(seq: list[int], item: int = 0) -> list[int]:
    out = [item] * (2 * len(seq) + 1)
    out[1::2] = seq
    return out


def analyze(text: str) -> Analysis:
    """Normalise ``text`` and convert it to phones, tones, word2ph and ids.

    Reference-exact (Style-Bert-VITS2 2.5.0 ``clean_text`` + ``cleaned_text_to_sequence``
    with JP-Extra, ``raise_yomi_error=False``). Never raises on any string: where the
    reference raises (e.g. ``まっーたく、困ったものだ。``, where ``ー`` follows ``っ`` and
    more speech follows), a fallback reading is returned with ``exact=False`` — there the
    ``ー`` becomes the dash phone ``-`` and the accents of the rest are kept (see
    :func:`engine.text.g2p.g2p`).
    """
    if not isinstance(text, str):
        raise TypeError(f"analyze() needs a str, got {type(text).__name__}")
    norm_text = normalize_text(text)
    res = g2p(norm_text)
    phone_ids = [SYMBOL_TO_ID.get(p, SYMBOL_TO_ID["UNK"]) for p in res.phones]
    return Analysis(
        text=text,
        norm_text=norm_text,
        phones=res.phones,
        tones=res.tones,
        word2ph=res.word2ph,
        phone_ids=phone_ids,
        tone_ids=[t + JP_TONE_START for t in res.tones],
        lang_ids=[JP_LANG_ID] * len(phone_ids),
        bert_text="".join(res.words),
        exact=res.exact and all(p in SYMBOL_TO_ID for p in res.phones),
    )
