"""`EngineOptions.from_env`: the environment variables derived from the fields declared with
`option` (issue 37): the names users set, each field's parsing from its type, its range, and
a warning naming the variable and value for one refused. A new field is settable from the
environment by its declaration alone."""

from __future__ import annotations

import dataclasses
import logging
from typing import Optional

import pytest

from engine import EngineOptions
from engine.option_info import env_variable, option, option_info, read_environment
from engine.options import ENV_PREFIX, THREADS_ENV, GuardMode, Precision, Runtime

# The names users set (Docker images, the add-on, shells): a renamed field must not rename
# its variable. Each with a value that is not its default and what it gives.
ROUND_TRIP: dict[str, tuple[str, str, object]] = {
    "threads": ("WYOMING_HAYAKOE_THREADS", " 3 ", 3),
    "first_window": ("WYOMING_HAYAKOE_FIRST_WINDOW", "0", 0),
    "conv2d": ("WYOMING_HAYAKOE_CONV2D", "1", True),
    "release_memory": ("WYOMING_HAYAKOE_RELEASE_MEMORY", "0", False),
    "offline": ("HAYAKOE_OFFLINE", "yes", True),
    "precision": ("WYOMING_HAYAKOE_PRECISION", "INT8", Precision.INT8),
    "runtime": ("WYOMING_HAYAKOE_RUNTIME", "openvino", Runtime.OPENVINO),
    "quantize_in_background": ("WYOMING_HAYAKOE_QUANTIZE_IN_BACKGROUND", "0", False),
    "playback_guard": ("WYOMING_HAYAKOE_PLAYBACK_GUARD", "off", GuardMode.OFF),
    "overlap": ("WYOMING_HAYAKOE_OVERLAP", "0", False),
    "first_clause": ("WYOMING_HAYAKOE_FIRST_CLAUSE", "12", 12),
}

SETTABLE = [f for f in dataclasses.fields(EngineOptions) if option_info(f) is not None]
UNSET = EngineOptions(quantize_in_background=True)
"""What the environment gives with none of the variables set: the library's defaults, but
int8 made behind the requests (the server's default)."""


def test_every_declared_field_has_its_users_variable() -> None:
    assert {f.name: env_variable(f, ENV_PREFIX) for f in SETTABLE} == {
        name: variable for name, (variable, _, _) in ROUND_TRIP.items()
    }
    assert "progress" not in ROUND_TRIP and "int8_min_snr_db" not in ROUND_TRIP  # not options
    assert env_variable(SETTABLE[0], ENV_PREFIX) == THREADS_ENV  # the rule's worked example


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_each_variable_round_trips(name: str) -> None:
    variable, raw, value = ROUND_TRIP[name]
    options = EngineOptions.from_env({variable: raw})
    assert getattr(options, name) == value != getattr(UNSET, name)
    assert options == dataclasses.replace(UNSET, **{name: value})  # that field only


def test_all_at_once_and_none_at_all() -> None:
    env = {variable: raw for variable, raw, _ in ROUND_TRIP.values()}
    assert EngineOptions.from_env(env) == EngineOptions(
        **{name: value for name, (_, _, value) in ROUND_TRIP.items()}
    )
    assert EngineOptions.from_env({}) == UNSET
    assert EngineOptions.from_env({v: "  " for v, _, _ in ROUND_TRIP.values()}) == UNSET


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_the_help_names_the_variable(name: str) -> None:
    """The flag's help (and so docs/configuration.md) spells the variable that is read."""
    f = next(f for f in SETTABLE if f.name == name)
    info = option_info(f)
    assert info is not None and f"${env_variable(f, ENV_PREFIX)}" in info.help


@pytest.mark.parametrize(
    ("variable", "raw", "why"),
    [
        ("WYOMING_HAYAKOE_THREADS", "many", "not an integer"),
        ("WYOMING_HAYAKOE_FIRST_WINDOW", "1.5", "not an integer"),
        ("WYOMING_HAYAKOE_CONV2D", "maybe", "not a switch: 1, true, yes, on or 0, false, no, off"),
        ("HAYAKOE_OFFLINE", "2", "not a switch"),
        ("WYOMING_HAYAKOE_OVERLAP", "enabled", "not a switch"),
        ("WYOMING_HAYAKOE_PRECISION", "int4", "not one of auto, fp32, int8"),
        ("WYOMING_HAYAKOE_RUNTIME", "cuda", "not one of auto, onnxruntime, openvino"),
        ("WYOMING_HAYAKOE_PLAYBACK_GUARD", "on", "not one of auto, off"),
        # out of the declared range: refused, not clamped (the whole reason, to its end)
        ("WYOMING_HAYAKOE_THREADS", "0", "not >= 1)"),
        ("WYOMING_HAYAKOE_THREADS", "-2", "not >= 1)"),
        ("WYOMING_HAYAKOE_FIRST_WINDOW", "-1", "not >= 0)"),
        ("WYOMING_HAYAKOE_FIRST_CLAUSE", "-1", "not >= 0)"),
    ],
)
def test_a_bad_or_out_of_range_value_is_ignored_naming_the_variable(
    variable: str, raw: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="engine.options"):
        assert EngineOptions.from_env({variable: raw}) == UNSET
    assert f"Ignoring {variable}={raw!r} ({why}" in caplog.text


def test_every_bounded_number_refuses_below_its_low_end() -> None:
    """The range comes from the declaration: each bounded number field, just below it."""
    bounded = [
        (f, info) for f in SETTABLE if (info := option_info(f)) and info.bounds.low is not None
    ]
    assert {f.name for f, _ in bounded} == {"threads", "first_window", "first_clause"}
    for f, info in bounded:
        assert info.bounds.low is not None
        below = str(int(info.bounds.low) - 1)
        assert getattr(EngineOptions.from_env({env_variable(f, ENV_PREFIX): below}), f.name) == (
            getattr(UNSET, f.name)
        )


@pytest.mark.parametrize(
    ("raw", "on"),
    [(w, True) for w in ("1", "true", "TRUE", "yes", "On")]
    + [(w, False) for w in ("0", "false", "No", "OFF")],
)
def test_a_switch_takes_the_usual_words(raw: str, on: bool) -> None:
    options = EngineOptions.from_env(
        {"WYOMING_HAYAKOE_CONV2D": raw, "WYOMING_HAYAKOE_OVERLAP": raw, "HAYAKOE_OFFLINE": raw}
    )
    assert options.conv2d is options.overlap is options.offline is on


# -- a field declared with option() is settable by its declaration alone ---------------------


@dataclasses.dataclass(frozen=True)
class WithBreath(EngineOptions):
    breath: float = option(0.5, "breathiness, 0 to 1", low=0.0, high=1.0)
    fallback: Precision | None = option(None, "precision to fall back to")


def test_a_new_engine_option_is_read_from_its_variable(caplog: pytest.LogCaptureFixture) -> None:
    options = WithBreath.from_env(
        {"WYOMING_HAYAKOE_BREATH": "0.25", "WYOMING_HAYAKOE_FALLBACK": "fp32"}
    )
    assert isinstance(options, WithBreath)
    assert options.breath == 0.25 and options.fallback is Precision.FP32
    assert WithBreath.from_env({}) == WithBreath(quantize_in_background=True)
    with caplog.at_level(logging.WARNING, logger="engine.options"):
        refused = WithBreath.from_env({"WYOMING_HAYAKOE_BREATH": "2"})
    assert refused.breath == 0.5
    assert "Ignoring WYOMING_HAYAKOE_BREATH='2' (not within 0..1)" in caplog.text


@dataclasses.dataclass(frozen=True)
class Small:
    name: str = option("mei", "a voice")
    count: Optional[int] = option(None, "how many", low=1, env="OTHER_COUNT")  # noqa: UP045 (typing.Union, too)
    level: float = option(1.0, "level", low=0.0, low_open=True, env_default=2.0)
    plain: int = 7  # not an option: never read


def test_any_dataclass_reads_its_options_by_type() -> None:
    env = {"T_NAME": " tsumugi ", "OTHER_COUNT": "4", "T_LEVEL": "0.5", "T_PLAIN": "9"}
    assert read_environment(Small, env, "T_") == ({"name": "tsumugi", "count": 4, "level": 0.5}, [])
    values, refused = read_environment(Small, {"T_COUNT": "4", "T_LEVEL": "0"}, "T_")
    assert values == {"level": 2.0}  # the env_default, as when unset
    assert refused == ["Ignoring T_LEVEL='0' (not > 0)"]


def test_a_type_the_environment_cannot_give_is_named() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithBytes:
        data: bytes = option(b"", "raw bytes")

    with pytest.raises(TypeError, match="no reading from the environment"):
        read_environment(WithBytes, {"T_DATA": "a"}, "T_")
