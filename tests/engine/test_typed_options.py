"""`Speaker.generate` / `stream` / `astream` take hayakoe's keywords (``style=``,
``speed=``, ...) typed (`engine.voice_backend.SynthesisOverrides`): mypy names a misspelled
option or a wrong type in a caller's code, and the keywords are exactly the fields of
`SynthesisOptions` (one list, checked here, not two that drift apart)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.voice_backend import SynthesisOptions, SynthesisOverrides
from tests.helpers.paths import REPO_ROOT

CALLER = """\
from engine import TTS

with TTS() as tts:
    speaker = tts.speakers["x"]
    speaker.generate("こんにちは。", style="Happy", speed=1.2, seed=3, sentence_silence=None)
    speaker.generate("こんにちは。", sped=1.2)
    speaker.stream("こんにちは。", speed="fast")
    speaker.astream("こんにちは。", intonation_scale=1.1, speaker_id=1)
"""


def test_the_keywords_are_the_fields_of_synthesis_options() -> None:
    fields = {f.name: str(f.type) for f in dataclasses.fields(SynthesisOptions)}
    keywords = {
        name: getattr(hint, "__forward_arg__", hint)  # ForwardRef('float') on Python >= 3.11
        for name, hint in SynthesisOverrides.__annotations__.items()
    }
    assert keywords == fields  # same names, same types (as written)
    assert SynthesisOverrides.__required_keys__ == frozenset()  # every one optional


def test_mypy_names_a_misspelled_option_and_a_wrong_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = pytest.importorskip("mypy.api")
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER, encoding="utf-8")
    monkeypatch.chdir(REPO_ROOT)  # `engine` found from here, as a user's checkout would
    args = [str(caller), "--python-version", "3.10", "--ignore-missing-imports"]
    args += ["--follow-imports", "silent", "--cache-dir", str(tmp_path / "cache")]
    report, errors, status = api.run(args)
    lines = [line for line in report.splitlines() if ": error:" in line]
    assert status == 1, report + errors
    assert len(lines) == 2, report  # lines 5 and 8 (hayakoe's spelling) are accepted
    assert 'caller.py:6: error: Unexpected keyword argument "sped"' in lines[0]
    assert 'caller.py:7: error: Argument "speed" to "stream"' in lines[1]
    assert 'incompatible type "str"; expected "float"' in lines[1]
