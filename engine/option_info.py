"""What a user-settable option of the engine's typed options says about itself.

A field of `SynthesisOptions` or `EngineOptions` that users set (a server flag, a preset key,
an environment variable) is declared with `option(default, help, ...)`: its help text and its
allowed range live beside its type and default, in one place. The server derives its flags,
its preset keys and the configuration reference from these fields (`wyoming_hayakoe.knobs`),
and its converters refuse a value out of range; `read_environment` derives the variables
(`EngineOptions.from_env`): each field's name, parsing and range. Adding an option is one
field plus its use.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from enum import Enum
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "FIELD_DEFAULT",
    "Bounds",
    "OptionInfo",
    "env_variable",
    "option",
    "option_info",
    "parse_env_value",
    "read_environment",
]

_T = TypeVar("_T")
_KEY = "option"
FIELD_DEFAULT: object = object()
"""`OptionInfo.env_default` when it is the field's own default."""


@dataclass(frozen=True)
class Bounds:
    """An allowed numeric range; None: unbounded on that side."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    """The low end excluded (``> low`` rather than ``>= low``)."""

    def holds(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        """``> 0``, ``>= 0``, ``0..1``: how a message states it."""
        if self.low is not None and self.high is not None and not self.low_open:
            return f"within {self.low:g}..{self.high:g}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        return " and ".join(parts) or "a finite number"


@dataclass(frozen=True)
class OptionInfo:
    """The help text and range of one option (a field's metadata)."""

    help: str
    """One line, as ``--help`` and the configuration reference show it."""
    bounds: Bounds = Bounds()
    metavar: str | None = None
    """The value's name in ``--help`` (None: the flag's own name)."""
    env: str | None = None
    """The environment variable that sets it, where it is not the rule's (`env_variable`)."""
    env_default: object = FIELD_DEFAULT
    """Its value when its variable is unset or refused, where not the field's default."""


def option(
    default: _T,
    help: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    metavar: str | None = None,
    env: str | None = None,
    env_default: object = FIELD_DEFAULT,
) -> _T:
    """A dataclass field with `default` that users set, described by `help` and bounded;
    `env` names its environment variable where the rule's name will not do, `env_default`
    is what `read_environment` gives while that is unset, where not `default`."""
    info = OptionInfo(help, Bounds(low, high, low_open), metavar, env, env_default)
    made: _T = field(default=default, metadata={_KEY: info})
    return made


def option_info(f: Field[object]) -> OptionInfo | None:
    """The `OptionInfo` of a field declared with `option`, else None."""
    info = f.metadata.get(_KEY)
    return info if isinstance(info, OptionInfo) else None


# -- the environment -------------------------------------------------------------------------

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def env_variable(f: Field[object], prefix: str) -> str:
    """The environment variable of a field declared with `option`: its `env`, else `prefix`
    and the field's name in capitals (``threads`` → ``WYOMING_HAYAKOE_THREADS``)."""
    info = option_info(f)
    if info is not None and info.env is not None:
        return info.env
    return prefix + f.name.upper()


def _value_type(hint: object) -> object:
    """``X | None`` and ``Optional[X]`` as ``X``: an unset variable already means the default."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def parse_env_value(hint: object, bounds: Bounds, raw: str) -> object:
    """`raw` (stripped, not empty) as a value of type `hint`: a bool (1/true/yes/on or
    0/false/no/off, any case), an int or float within `bounds`, an enum member by its value
    (any case), a str as given. ValueError says what is wrong with it, TypeError that the
    type cannot be read from text."""
    kind = _value_type(hint)
    if kind is bool:
        word = raw.lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ValueError(f"not a switch: {', '.join(_TRUE)} or {', '.join(_FALSE)}")
    if kind is int or kind is float:
        try:
            number: int | float = int(raw) if kind is int else float(raw)
        except ValueError:
            raise ValueError("not an integer" if kind is int else "not a number") from None
        if not bounds.holds(number):
            raise ValueError(f"not {bounds.describe()}")
        return number
    if isinstance(kind, type) and issubclass(kind, Enum):
        members = {str(m.value).lower(): m for m in kind}
        member = members.get(raw.lower())
        if member is None:
            raise ValueError(f"not one of {', '.join(str(m.value) for m in kind)}")
        return member
    if kind is str:
        return raw
    raise TypeError(f"no reading from the environment for a {kind!r} option")


def read_environment(
    options: type[DataclassInstance], environ: Mapping[str, str], prefix: str
) -> tuple[dict[str, object], list[str]]:
    """The values the environment gives the fields of the dataclass `options` declared with
    `option` (each from `env_variable(field, prefix)`, parsed by its type, checked against its
    range), and a line for each value refused (``Ignoring NAME='value' (why)``). A field whose
    variable is unset, empty or refused is left out (its default), or given its `env_default`."""
    hints = typing.get_type_hints(options)
    values: dict[str, object] = {}
    refused: list[str] = []
    for f in fields(options):
        info = option_info(f)
        if info is None:
            continue
        name = env_variable(f, prefix)
        raw = environ.get(name, "").strip()
        if raw:
            try:
                values[f.name] = parse_env_value(hints[f.name], info.bounds, raw)
                continue
            except ValueError as err:
                refused.append(f"Ignoring {name}={raw!r} ({err})")
        if info.env_default is not FIELD_DEFAULT:
            values[f.name] = info.env_default
    return values, refused
