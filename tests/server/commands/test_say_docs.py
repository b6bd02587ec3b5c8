"""docs/say.md against `say --help`: every flag the page names is one `say` accepts, every
flag of `say`'s own is on the page, and the exit statuses are those of `--help`, each example
error line under the status `say` gives it (the behaviour itself: test_say.py, real program)."""

from __future__ import annotations

import re

from tests.helpers.paths import REPO_ROOT
from wyoming_hayakoe.commands.say import EXIT_STATUS, build_parser
from wyoming_hayakoe.settings import add_voice_arguments

PAGE = REPO_ROOT / "docs" / "say.md"


def _usage_part() -> str:
    """The page up to its measurements (which name the benchmarks' flags, not `say`'s)."""
    text = PAGE.read_text(encoding="utf-8")
    return text[: text.index("\nMeasured")]


def _option_strings(parser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def test_every_flag_on_the_page_is_one_say_accepts() -> None:
    accepted = _option_strings(build_parser())
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", _usage_part()))
    named |= set(re.findall(r"(?<![\w-])-o(?=\s)", _usage_part()))
    assert named, "no flags found on the page"
    assert named - accepted == set(), (
        f"docs/say.md names flags say does not take: {named - accepted}"
    )


def test_say_s_own_flags_are_all_on_the_page() -> None:
    """The voice, engine, synthesis and output flags are the server's (`add_voice_arguments`,
    described as a group); every other flag of `say` is named on the page."""
    import argparse

    shared_parser = argparse.ArgumentParser(add_help=False)
    add_voice_arguments(shared_parser)
    own = _option_strings(build_parser()) - _option_strings(shared_parser) - {"-h", "--help"}
    page = _usage_part()
    missing = {flag for flag in own if not re.search(rf"`{re.escape(flag)}[ `=]", page)}
    # a flag with a long and a short form needs only one of them on the page
    for action in build_parser()._actions:
        if set(action.option_strings) & missing and set(action.option_strings) - missing:
            missing -= set(action.option_strings)
    assert not missing, f"say's flags missing from docs/say.md: {sorted(missing)}"


def _documented_statuses() -> tuple[dict[int, str], dict[int, list[str]]]:
    """The page's exit-status items (``- `N` meaning: ...``) and the example lines (``say:
    ...`` in the code blocks) under each."""
    part = _usage_part()
    section = part[part.index("**Exit status**") :]
    items: dict[int, str] = {}
    examples: dict[int, list[str]] = {}
    current: int | None = None
    for line in section.splitlines():
        item = re.match(r"^  - `(\d+)` (.*)", line)
        if item:
            current = int(item.group(1))
            items[current] = item.group(2)
            examples[current] = []
        elif current is not None and line.strip().startswith("say: "):
            examples[current].append(line.strip())
    return items, examples


def test_exit_statuses_are_those_of_the_help() -> None:
    description = build_parser().description or ""
    items, examples = _documented_statuses()
    assert set(items) == set(EXIT_STATUS) == {0, 1, 2}
    for code, meaning in EXIT_STATUS.items():
        assert f"{code} {meaning}" in " ".join(description.split()), (code, description)
        assert items[code].startswith(meaning), f"docs/say.md status {code}: {items[code]!r}"
    # names that do not exist are refused with 2 (UnknownNameError), not reported as failures
    assert examples[2] and all(line.startswith("say: unknown ") for line in examples[2])
    assert examples[1] and not any(" unknown " in line for line in examples[1])
