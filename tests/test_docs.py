"""The documentation: the generated configuration reference is current, and every relative
link and #anchor in README.md, docs/*.md and addon/*.md points to a file and heading that
exist (no network: links with a scheme are not followed)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.paths import REPO_ROOT

GENERATOR = REPO_ROOT / "scripts" / "gen_configuration.py"
CHECKED = sorted(
    [
        REPO_ROOT / "README.md",
        *(REPO_ROOT / "docs").glob("*.md"),
        *(REPO_ROOT / "addon").glob("*.md"),
    ]
)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_configuration", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_current():
    gen = _generator()
    committed = gen.OUTPUT.read_text(encoding="utf-8") if gen.OUTPUT.exists() else ""
    assert committed == gen.render(), (
        f"{gen.OUTPUT.relative_to(REPO_ROOT)} is not what the flags and addon/ say now: "
        f"run `{gen.COMMAND}` and commit the result"
    )


def test_configuration_reference_lists_every_flag_and_option():
    """What the generator reads is all there: a flag or option it dropped would fail here."""
    import yaml

    from wyoming_hayakoe.settings import build_parser

    text = _generator().render()
    flags = {
        flag
        for action in build_parser()._actions
        if action.help != "==SUPPRESS==" and action.dest != "help"
        for flag in action.option_strings
    }
    missing = sorted(f for f in flags if f"`{f}" not in text and f", {f}" not in text)
    assert not missing, f"server flags missing from the reference: {missing}"
    config = yaml.safe_load((REPO_ROOT / "addon" / "config.yaml").read_text(encoding="utf-8"))
    absent = sorted(o for o in config["schema"] if f"| `{o}` |" not in text)
    assert not absent, f"add-on options missing from the reference: {absent}"


def test_addon_options_are_read_from_the_service_script():
    gen = _generator()
    script = "\n".join(
        [
            'readonly port="${HAYAKOE_ADDON_PORT:-10200}"',
            "flags=(",
            '    --uri "tcp://0.0.0.0:${port}"',
            ")",
            "declare -A numeric=(",
            "    [speed]=--speed",
            ")",
            "add_voice() {",
            '    flags+=(--voice "${1}")',
            "}",
            "if bashio::config.has_value 'voices'; then",
            '    add_voice "$(bashio::config voices)"',
            "fi",
            "if bashio::config.false 'streaming'; then",
            "    flags+=(--no-streaming)",
            "fi",
            "if bashio::config.has_value 'hf_token'; then",
            "    export HF_TOKEN",
            "fi",
        ]
    )
    found = gen.addon_option_flags(script, ["voices", "speed", "streaming", "hf_token"])
    assert found == {
        "voices": gen.OptionFlag("--voice", "value"),
        "speed": gen.OptionFlag("--speed", "value"),
        "streaming": gen.OptionFlag("--no-streaming", "false"),
        "hf_token": gen.OptionFlag("HF_TOKEN", "env"),
    }
    assert gen.addon_fixed_flags(script) == ["--uri tcp://0.0.0.0:10200"]
    with pytest.raises(gen.SourceError, match="'chime' is never read"):
        gen.addon_option_flags(script, ["chime"])


# --- links ---------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML = re.compile(r"""<(?:a|img)\s[^>]*?(?:href|src)=["']([^"']+)["']""")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"""<a\s[^>]*?(?:id|name)=["']([^"']+)["']""")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    lines = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        marker = _FENCE.match(line)
        if marker and (fence is None or marker.group(1) == fence):
            fence = None if fence else marker.group(1)
            continue
        if fence is None:
            lines.append((number, line))
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without markup, lowercased, punctuation
    dropped (letters, digits, '_', '-' and spaces stay), spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[*_]{1,3}(\S(?:.*?\S)?)[*_]{1,3}", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every #anchor a Markdown file offers: its headings (repeats get -1, -2, …) and
    explicit <a id=…> / <a name=…>."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = path.read_text(encoding="utf-8")
    for _, line in _prose_lines(text):
        if heading := _HEADING.match(line):
            slug = github_slug(heading.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    found.update(m.group(1) for m in _HTML_ANCHOR.finditer(text))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image in a Markdown file, code left out."""
    found = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        line = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for pattern in (_INLINE_LINK, _HTML):
            found += [(number, m.group(1)) for m in pattern.finditer(line)]
        if reference := _REFERENCE.match(line):
            found.append((number, reference.group(1)))
    return found


def broken_links(path: Path, root: Path = REPO_ROOT) -> list[str]:
    """'FILE:LINE: TARGET: what is wrong' for each link of `path` that leads nowhere."""
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # http(s), mailto: not followed (no network)
        where = f"{path.relative_to(root)}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{where}: no such file")
            continue
        if anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{where}: no heading #{anchor} in {destination.name}")
    return problems


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_relative_links_and_anchors_resolve(path):
    problems = broken_links(path)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_link_checker_finds_what_is_broken(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## Int8 or fp32 (`--precision`)\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Same name\n\n## Same name\n\n"
        "[ok](other.md#int8-or-fp32---precision) [ok](#same-name-1) [ok](https://x.invalid/y)\n"
        "[bad](other.md#int8-or-fp32-precision) [bad](#nowhere) ![bad](missing.png)\n"
        "```sh\n[not a link](nowhere.md)\n# not a heading\n```\n"
        "`[code](nowhere.md)`\n"
    )
    problems = [p.split(": ", 1)[1] for p in broken_links(page, tmp_path)]
    assert problems == [
        "other.md#int8-or-fp32-precision: no heading #int8-or-fp32-precision in other.md",
        "#nowhere: no heading #nowhere in page.md",
        "missing.png: no such file",
    ]
    assert "not-a-heading" not in anchors(page)


# --- tables --------------------------------------------------------------------------------


def _cells(row: str) -> int:
    """How many cells GitHub makes of a table row (a '|' splits unless escaped, in code too)."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return len(re.split(r"(?<!\\)\|", inner))


def ragged_tables(path: Path) -> list[str]:
    """'FILE:LINE: n cells, header has m' for each table row GitHub would cut or pad."""
    problems = []
    header: int | None = None
    previous = ""
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        if not line.lstrip().startswith("|"):
            header = None
        elif header is None and re.fullmatch(r"\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*", line):
            header = _cells(previous)
            if _cells(line) != header:
                problems.append(f"{path.name}:{number}: delimiter row differs from the header")
        elif header is not None and _cells(line) != header:
            problems.append(f"{path.name}:{number}: {_cells(line)} cells, header has {header}")
        previous = line
    return problems


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_table_rows_have_the_header_s_cells(path):
    problems = ragged_tables(path)
    assert not problems, "tables that render ragged:\n" + "\n".join(problems)


def test_table_check_counts_cells_as_github_does(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "| a | b |\n| --- | --- |\n| `x\\|y` | z |\n| one | two | three |\n\n"
        "| c |\n| --- |\n| `p|q` |\n"
    )
    assert ragged_tables(page) == [
        "page.md:4: 3 cells, header has 2",
        "page.md:8: 2 cells, header has 1",
    ]
