"""The text path's bounds, in one place: how much one sentence, one word, one number may hold
before the step whose cost grows with it (a leaf module: imports nothing).

Each bound sits where the cost arises and keeps ordinary text untouched: the figures below were
measured on this project's golden sentences and on hostile input (long runs of one letter,
digit, mark or emoji), see docs/frontend.md, "Bounds". The server's per-request bounds
(characters per request, output seconds) are its own and live in the server.
"""

from __future__ import annotations

__all__ = [
    "MAX_LATIN_WORD",
    "MAX_NUMBER_DIGITS",
    "MAX_SENTENCE_CHARS",
    "MAX_SENTENCE_MORAE",
    "MAX_SENTENCE_PHONES",
]

MAX_SENTENCE_CHARS = 150
"""Characters in one sentence of text (`engine.text.splitter`): a longer one is cut after a
comma or space, else at the limit, and so is a run of marks, emoji or spaces that holds no
speech. BERT reads at most 510 characters; a long sentence delays streaming; the synthesizer's
memory grows with the square of a sentence's length; and OpenJTalk's frontend crashes the
process (segfault) on 2,733 or more characters in one call (measured, pyopenjtalk 0.4), which
a sentence of 3,000 ``!`` reached before this bound held for every kind of run."""

MAX_SENTENCE_MORAE = 300
"""Morae in one sentence given as accent phrases (`engine.text.from_phrases`): a longer
sentence is cut at an accent phrase boundary (an accent phrase longer than this at a mora
boundary). The phrase path's counterpart of `MAX_SENTENCE_CHARS`: a 150-character sentence of
ordinary Japanese has 130-180 morae, a kanji-dense one about 210 (measured). One sentence of
2,000 morae took the synthesizer to 5.7 GB (issue 54); memory grows with the square of it."""

MAX_SENTENCE_PHONES = 600
"""Phones (punctuation included, blanks not) in one sentence given as accent phrases: the cut
of `MAX_SENTENCE_MORAE` also holds this. Two phones per mora at most (consonant + vowel), so
300 morae and their pause marks fit; a 150-character sentence of text has 300-360 phones
(ordinary and kanji-dense Japanese, measured)."""

MAX_LATIN_WORD = 30
"""Letters in one Latin word given to the loanword converter (kanalizer, `engine.text.english`):
a longer word is spelled letter by letter. English words are shorter
(``antidisestablishmentarianism`` has 28); a longer run of letters is an identifier, a hash or
a joke. kanalizer costs about 0.45 ms a letter up to 30 letters, and then grows with the square
of the word (40 letters: 0.56 ms a letter, 400: 2.5 ms, 1,400: 23 s for the word) while it
holds the interpreter. Cut into pieces, letters with no word in them would still cost 0.45 ms
each, about ten times ordinary Japanese text; spelled, they cost what Japanese costs."""

MAX_NUMBER_DIGITS = 20
"""Digits in one number read as a number (`engine.text.rewriter`): a longer run of digits
(10^20, 一垓, and beyond: past every unit in use) is read digit by digit. The rewrite rules' number
patterns cost the square of a digit run's length (4,000 digits: 3.4 s), and the normaliser's
``num2words`` refuses numbers of more than 52 digits."""
