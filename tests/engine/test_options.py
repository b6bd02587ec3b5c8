"""`EngineOptions`' closed sets (precision, runtime, playback guard) as enums: a string is
taken and held as its member, a wrong one is named with the values allowed, and a member is
written exactly as its string wherever it ends up (a log line, a JSON cache file)."""

from __future__ import annotations

import json

import pytest

from engine import TTS, EngineOptions
from engine.options import GuardMode, Precision, Runtime


def test_strings_become_members() -> None:
    options = EngineOptions(precision="int8", runtime="openvino", playback_guard="off")
    assert options.precision is Precision.INT8
    assert options.runtime is Runtime.OPENVINO
    assert options.playback_guard is GuardMode.OFF
    assert options == EngineOptions(
        precision=Precision.INT8, runtime=Runtime.OPENVINO, playback_guard=GuardMode.OFF
    )


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("precision", "EngineOptions.precision must be one of auto, fp32, int8, not 'int4'"),
        ("runtime", "EngineOptions.runtime must be one of auto, onnxruntime, openvino, not 'int4'"),
        ("playback_guard", "EngineOptions.playback_guard must be one of auto, off, not 'int4'"),
    ],
)
def test_a_wrong_value_is_named(field: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        EngineOptions(**{field: "int4"})
    assert str(err.value) == message


def test_tts_takes_the_precision_as_a_string_or_a_member() -> None:
    with TTS(precision="fp32") as tts:
        assert tts.options.precision is Precision.FP32
    with TTS(precision=Precision.INT8) as tts:
        assert tts.options.precision is Precision.INT8
    with pytest.raises(ValueError, match="TTS precision must be one of auto, fp32, int8, not 'q8'"):
        TTS(precision="q8")


def test_members_are_written_as_their_strings() -> None:
    member = Precision.INT8
    assert member == "int8" and f"{member}" == "int8" and str(member) == "int8"  # logging's %s
    assert json.loads(json.dumps({"precision": member})) == {"precision": "int8"}
    assert {"int8": 1}[member] == 1  # a table keyed by the strings still finds it


def test_the_environment_gives_members_and_ignores_a_wrong_value(caplog) -> None:
    env = {"WYOMING_HAYAKOE_PRECISION": "FP32", "WYOMING_HAYAKOE_RUNTIME": "cuda"}
    options = EngineOptions.from_env(env)
    assert options.precision is Precision.FP32
    assert options.runtime is Runtime.AUTO
    assert "Ignoring WYOMING_HAYAKOE_RUNTIME='cuda'" in caplog.text
