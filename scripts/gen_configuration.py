"""Write docs/configuration.md, the flag and option reference, from where they are defined.

    python scripts/gen_configuration.py           # rewrite docs/configuration.md
    python scripts/gen_configuration.py --check   # exit 1 when the committed file is stale

Sources, read as they are (nothing here restates a flag): the server's argparse parser
(`wyoming_hayakoe.settings.build_parser`), each subcommand's `build_parser()`
(`wyoming_hayakoe.commands`), and the Home Assistant add-on's `addon/config.yaml` (options,
schema), `addon/translations/en.yaml` (what the UI says of each option) and its service script
`addon/rootfs/etc/s6-overlay/s6-rc.d/wyoming-hayakoe/run` (which option becomes which flag).
`tests/test_docs.py` regenerates in memory and fails when the committed file differs.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "configuration.md"
ADDON = REPO / "addon"
ADDON_CONFIG = ADDON / "config.yaml"
ADDON_TRANSLATION = ADDON / "translations" / "en.yaml"
ADDON_SERVICE = ADDON / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d" / "wyoming-hayakoe" / "run"
COMMAND = "python scripts/gen_configuration.py"


class SourceError(Exception):
    """The sources cannot be documented as they are (the message names the file and field)."""


# --- argparse ------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _expand_help(action: argparse.Action, prog: str) -> str:
    """The help text with argparse's %(...)s placeholders filled, as `--help` shows it."""
    text = action.help or ""
    if "%" not in text:
        return text
    params = dict(vars(action), prog=prog)
    for name, value in list(params.items()):
        if hasattr(value, "__name__"):
            params[name] = value.__name__
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return text % params


def _usage(action: argparse.Action) -> str:
    """How the flag is written: `--name VALUE`, `--x` / `--no-x`, `--pick a|b`."""
    if not action.option_strings:
        name = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        return name + (" ..." if action.nargs in ("*", "+") else "")
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    if action.metavar is not None:
        value = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        value = "|".join(map(str, action.choices))
    else:
        value = action.dest.upper()
    if action.nargs == "?":
        value = f"[{value}]"
    return ", ".join(f"{flag} {value}" for flag in action.option_strings)


def _shown(actions: Iterable[argparse.Action]) -> list[argparse.Action]:
    return [
        a
        for a in actions
        if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
    ]


def _repeatable(action: argparse.Action) -> bool:
    return isinstance(action, (argparse._AppendAction, argparse._AppendConstAction))


def _flag_rows(actions: Sequence[argparse.Action], prog: str, exclusive: dict[str, str]) -> str:
    rows = ["| flag | meaning |", "| --- | --- |"]
    for action in actions:
        if isinstance(action, argparse._SubParsersAction):
            rows += _subparser_rows(action)
            continue
        meaning = _expand_help(action, prog)
        if _repeatable(action):
            meaning += " (repeatable)" if "repeatable" not in meaning else ""
        if action.option_strings and action.required:
            meaning += " (required)"
        if not action.option_strings and action.nargs in ("?", "*"):
            meaning += " (optional)"
        key = action.option_strings[0] if action.option_strings else action.dest
        if key in exclusive:
            meaning += f" ({exclusive[key]})"
        rows.append(f"| `{_cell(_usage(action))}` | {_cell(meaning)} |")
    return "\n".join(rows)


def _subparser_rows(action: argparse._SubParsersAction) -> list[str]:
    """One row per sub-action (`dict check FILE ...`): its help, then its arguments'."""
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    rows = []
    for name, sub in action.choices.items():
        arguments = _shown(sub._actions)
        usage = " ".join([name, *(_usage(a) for a in arguments)])
        meaning = "; ".join(
            [helps.get(name, ""), *(f"{_usage(a)}: {_expand_help(a, sub.prog)}" for a in arguments)]
        )
        rows.append(f"| `{_cell(usage)}` | {_cell(meaning)} |")
    return rows


def _exclusive_notes(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Flag → 'one of ...' for the parser's mutually exclusive groups."""
    notes = {}
    for group in parser._mutually_exclusive_groups:
        flags = [a.option_strings[-1] for a in group._group_actions if a.option_strings]
        note = ("exactly one of " if group.required else "at most one of ") + ", ".join(
            f"`{f}`" for f in flags
        )
        for action in group._group_actions:
            if action.option_strings:
                notes[action.option_strings[0]] = note
    return notes


def _groups(parser: argparse.ArgumentParser) -> list[tuple[str, list[argparse.Action]]]:
    """(title, actions) per argument group, in the parser's order; empty groups left out."""
    titled = []
    for group in parser._action_groups:
        if group is parser._positionals:
            title = "Arguments"
        elif group is parser._optionals:
            title = "General"
        else:
            title = (group.title or "").strip()
            title = title[:1].upper() + title[1:]
        actions = _shown(group._group_actions)
        if actions:
            titled.append((title, actions))
    return titled


def _signature(action: argparse.Action) -> tuple[tuple[str, ...], str | None]:
    return tuple(action.option_strings), action.help


def _server_section(server: argparse.ArgumentParser) -> str:
    parts = [
        "## The server: `wyoming-hayakoe`",
        "",
        f"`{server.prog}` (or `python -m wyoming_hayakoe`) with no subcommand is the Wyoming "
        "server. Flags (`--help` prints the same):",
    ]
    notes = _exclusive_notes(server)
    for title, actions in _groups(server):
        parts += ["", f"### {title}", "", _flag_rows(actions, server.prog, notes)]
    return "\n".join(parts)


def _command_section(
    name: str,
    summary: str,
    parser: argparse.ArgumentParser,
    server_flags: set[tuple[tuple[str, ...], str | None]],
) -> str:
    shared = [a for a in _shown(parser._actions) if _signature(a) in server_flags]
    own = [a for a in _shown(parser._actions) if _signature(a) not in server_flags]
    parts = [f"### `wyoming-hayakoe {name}`", "", summary.rstrip(".") + "."]
    if parser.description:
        parts += ["", " ".join(parser.description.split())]
    parts += ["", _flag_rows(own, parser.prog, _exclusive_notes(parser))]
    if shared:
        flags = ", ".join(f"`{a.option_strings[0]}`" for a in shared if a.option_strings)
        parts += ["", f"Also the server's flags, with the same meaning: {flags}."]
    return "\n".join(parts)


def _subcommands_section(server: argparse.ArgumentParser) -> str:
    from wyoming_hayakoe.subcommands import SUBCOMMANDS, module_name

    server_flags = {_signature(a) for a in _shown(server._actions)}
    parts = [
        "## Subcommands",
        "",
        "`wyoming-hayakoe SUBCOMMAND ...`; each has its own `--help`.",
    ]
    for name, summary in SUBCOMMANDS.items():
        module = importlib.import_module(module_name(name))
        build = getattr(module, "build_parser", None)
        if build is None:
            raise SourceError(f"{module.__name__}: no build_parser() to document")
        parts += ["", _command_section(name, summary, build(), server_flags)]
    return "\n".join(parts)


# --- the add-on ----------------------------------------------------------------------------


@dataclass(frozen=True)
class OptionFlag:
    """What the add-on's service script passes to the server for one option."""

    flag: str
    when: str
    """'value' (the option's value), 'true' / 'false' (the flag alone, when the option is so),
    or 'env' (`flag` is an environment variable)."""


_CONFIG_CALL = re.compile(r"bashio::config(?:\.(has_value|true|false))?\s+['\"](\w+)['\"]")
_TABLE_ENTRY = re.compile(r"^\s*\[(\w+)\]=(--[\w-]+)\s*$")
_FLAG_ADDED = re.compile(r"flags\+=\(\s*\"?(--[a-z0-9-]+)")
_EXPORT = re.compile(r"^\s*export\s+(\w+)")
_READONLY = re.compile(r'^readonly\s+(\w+)="\$\{\w+:-([^}]*)\}"')
_ASSIGNED = re.compile(r'^(\w+)="([^"$]*(?:\$\{\w+\}[^"$]*)*)"$')


def _function_flag(script: list[str], function: str) -> str | None:
    """The first flag a shell function of the script adds."""
    start = next((i for i, line in enumerate(script) if line.startswith(f"{function}()")), None)
    if start is None:
        return None
    for line in script[start + 1 :]:
        if line.startswith("}"):
            return None
        if found := _FLAG_ADDED.search(line):
            return found.group(1)
    return None


def addon_option_flags(script_text: str, options: Iterable[str]) -> dict[str, OptionFlag]:
    """Option → what the service script makes of it, read from the script itself."""
    script = script_text.splitlines()
    found: dict[str, OptionFlag] = {}
    for line in script:
        if entry := _TABLE_ENTRY.match(line):
            found[entry.group(1)] = OptionFlag(entry.group(2), "value")
    for option in options:
        if option in found:
            continue
        first = next(
            (
                (i, m.group(1))
                for i, line in enumerate(script)
                for m in _CONFIG_CALL.finditer(line)
                if m.group(2) == option
            ),
            None,
        )
        if first is None:
            raise SourceError(f"{ADDON_SERVICE}: option {option!r} is never read")
        start, test = first
        for line in script[start:]:
            if flag := _FLAG_ADDED.search(line):
                when = test if test in ("true", "false") else "value"
                found[option] = OptionFlag(flag.group(1), when)
                break
            if export := _EXPORT.match(line):
                found[option] = OptionFlag(export.group(1), "env")
                break
            call = re.match(r"^\s*(\w+)\s+\"", line)
            if call and (flag_of_function := _function_flag(script, call.group(1))):
                found[option] = OptionFlag(flag_of_function, "value")
                break
        else:
            raise SourceError(f"{ADDON_SERVICE}: option {option!r} passes no flag")
    return found


def addon_fixed_flags(script_text: str) -> list[str]:
    """The flags the service script always passes, with its defaults filled in."""
    script = script_text.splitlines()
    defaults: dict[str, str] = {}

    def filled(words: str) -> str:
        return re.sub(
            r"\$\{(\w+)\}",
            lambda m: defaults.get(m.group(1), m.group(0)),
            words.replace('"', ""),
        )

    for line in script:
        if readonly := _READONLY.match(line):
            defaults[readonly.group(1)] = readonly.group(2)
        elif (assigned := _ASSIGNED.match(line)) and assigned.group(1) not in defaults:
            defaults[assigned.group(1)] = filled(assigned.group(2))

    fixed = []
    inside = False
    for line in script:
        if line.startswith("flags=("):
            inside = True
            continue
        if inside:
            if line.strip() == ")":
                inside = False
            else:
                fixed.append(filled(line.strip()))
        elif line.startswith("flags+=("):
            fixed.append(filled(line[len("flags+=(") :].rstrip(")")))
    return fixed


def _addon_default(options: dict[str, object], name: str) -> str:
    if name not in options:
        return "not set"
    value = options[name]
    if value == [] or value == "":
        return "empty"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def _schema_type(schema: object) -> str:
    if isinstance(schema, list):
        inner = schema[0]
        if isinstance(inner, dict):
            return "list of {" + ", ".join(f"{k}: {v}" for k, v in inner.items()) + "}"
        return f"list of {inner}"
    return str(schema)


def _addon_section(server: argparse.ArgumentParser) -> str:
    config = yaml.safe_load(ADDON_CONFIG.read_text(encoding="utf-8"))
    texts = yaml.safe_load(ADDON_TRANSLATION.read_text(encoding="utf-8"))["configuration"]
    script = ADDON_SERVICE.read_text(encoding="utf-8")
    schema: dict[str, object] = config["schema"]
    options: dict[str, object] = config["options"]
    mapping = addon_option_flags(script, schema)
    known = {flag for a in server._actions for flag in a.option_strings}
    for option, target in mapping.items():
        if target.when != "env" and target.flag not in known:
            raise SourceError(
                f"{ADDON_SERVICE}: option {option!r} passes {target.flag}, "
                "which the server does not know"
            )
    rows = [
        "| option | type | default | passed as | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, kind in schema.items():
        if name not in texts:
            raise SourceError(f"{ADDON_TRANSLATION}: configuration.{name} is missing")
        target = mapping[name]
        passed = {
            "value": f"`{target.flag}`",
            "true": f"`{target.flag}` when on",
            "false": f"`{target.flag}` when off",
            "env": f"`${target.flag}` (environment)",
        }[target.when]
        rows.append(
            f"| `{name}` | `{_cell(_schema_type(kind))}` | {_cell(_addon_default(options, name))}"
            f" | {_cell(passed)} | {_cell(texts[name]['description'])} |"
        )
    fixed = ", ".join(f"`{words}`" for words in addon_fixed_flags(script))
    return "\n".join(
        [
            "## The Home Assistant add-on's options",
            "",
            f"From `addon/config.yaml` (schema, defaults), `addon/translations/en.yaml` (the "
            f"text the UI shows) and the service script "
            f"(`{ADDON_SERVICE.relative_to(REPO)}`, which turns each option into a server flag; "
            "an option left empty passes nothing, so the server's default applies). "
            "Explained at length in [addon/DOCS.md](../addon/DOCS.md).",
            "",
            "\n".join(rows),
            "",
            f"Always passed: {fixed}. Voices copied into `/share/hayakoe` are added as "
            "`--voice` (and its AivisHub files as `--voice-dir`); see "
            "[addon/DOCS.md](../addon/DOCS.md#your-own-voices-sharehayakoe).",
        ]
    )


# --- the document --------------------------------------------------------------------------


def render() -> str:
    """docs/configuration.md as it should be now."""
    from wyoming_hayakoe.settings import build_parser

    server = build_parser()
    body = "\n\n".join(
        [
            "# Configuration reference",
            f"<!-- Generated by `{COMMAND}` from the argparse definitions and addon/; "
            "do not edit by hand: change the sources and run it again. -->",
            "Every flag of `wyoming-hayakoe` and its subcommands, and every option of the Home "
            "Assistant add-on with the flag it becomes. Generated from the code; what the flags "
            "do at length: [the server](server.md), [voices](voices.md), "
            "[announcements](announcements.md), "
            "[int8 or fp32](voices.md#int8-or-fp32---precision), "
            "[the playback guard](server.md#slow-boards-the-playback-guard).",
            _server_section(server),
            _subcommands_section(server),
            _addon_section(server),
        ]
    )
    return body.rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(REPO)} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
