"""Score the rewrite pass on tests/data/readings_ha.tsv: the share of phrases read as expected.

Each line is ``text<TAB>expected``. A phrase is read correctly when
``analyze(rewrite(text))`` has the same phonemes as ``analyze(expected)`` (the expected
column is written so that the reference frontend reads it right). Phonemes are compared with
``e i`` → ``e e`` and ``o u`` → ``o o`` (how えい/おう are said); accents are not compared.

    python benchmarks/readings_score.py [--misses]            # this checkout's rewrite
    PYTHONPATH=/path/to/other/checkout python benchmarks/readings_score.py   # another's

tests/test_readings_ha.py uses the same functions and asserts the share.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHRASES = ROOT / "tests" / "data" / "readings_ha.tsv"
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Phrase:
    """One line of the phrase set."""

    line: int
    """Line number in the file (1-based)."""
    text: str
    """What Home Assistant sends."""
    expected: str
    """Text the reference frontend reads the way ``text`` should be read."""


def load_phrases(path: Path = PHRASES) -> list[Phrase]:
    """The phrases of a TSV file (``#`` lines are comments)."""
    out = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        text, sep, expected = raw.partition("\t")
        if not sep or not text or not expected or "\t" in expected:
            raise ValueError(f"{path}:{n}: expected 'text<TAB>reading', got {raw!r}")
        out.append(Phrase(n, text, expected))
    return out


def phonemes(text: str) -> tuple[str, ...]:
    """The phonemes the reference frontend gives ``text`` (えい/おう as long vowels)."""
    from engine.text import analyze

    phones = list(analyze(text).phones[1:-1])
    for i in range(1, len(phones)):
        if phones[i] == "i" and phones[i - 1] == "e":
            phones[i] = "e"
        elif phones[i] == "u" and phones[i - 1] == "o":
            phones[i] = "o"
    return tuple(phones)


def misses(phrases: list[Phrase]) -> list[tuple[Phrase, str]]:
    """The phrases that ``rewrite`` does not read as expected, with what it made of them."""
    from engine.text import rewrite

    out = []
    for p in phrases:
        got = rewrite(p.text)
        if phonemes(got) != phonemes(p.expected):
            out.append((p, got))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--misses", action="store_true", help="list the phrases read wrong")
    args = parser.parse_args()
    import engine.text

    phrases = load_phrases()
    wrong = misses(phrases)
    right = len(phrases) - len(wrong)
    print(f"engine from {Path(engine.text.__file__).parent}")
    print(f"read as expected: {right}/{len(phrases)} = {right / len(phrases):.1%}")
    if args.misses:
        for p, got in wrong:
            print(f"  line {p.line}: {p.text!r} -> {got!r} (expected {p.expected!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
