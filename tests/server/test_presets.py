"""Announcements and alarms over real TCP with a Wyoming client, on the embedded voice:
presets served as voices, output rate, gain, lead/tail silence, chime, loudness; bad
presets refused at start (parser and the real program)."""

from __future__ import annotations

import math
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart
from wyoming.info import Describe, Info
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeVoice,
)

from engine import EMBEDDED_VOICE_NAME
from tests.helpers.paths import REPO_ROOT
from tests.helpers.program import program_env
from wyoming_hayakoe.settings import OutputDefaults, parse_settings

pytestmark = pytest.mark.timeout(180)

MEI = EMBEDDED_VOICE_NAME
TEXT = "玄関のドアが開いています。確認してください。"
CEILING = int(np.rint(10 ** (-1 / 20) * 32767))


def _chime(path: Path, rate: int = 22050, seconds: float = 0.3) -> Path:
    t = np.arange(int(rate * seconds)) / rate
    tone = 0.5 * np.sin(2 * np.pi * 880 * t) * np.exp(-4 * t)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((tone * 32767).astype("<i2").tobytes())
    return path


def _settings(*argv: str, chime: Path | None = None):
    args = [a.replace("CHIME", str(chime)) for a in argv]
    return parse_settings(["--uri", "tcp://127.0.0.1:0", *args], environ={})


async def _start(start_server, settings):
    fields = {
        f: getattr(settings, f)
        for f in ("uri", "voices", "default_voice", "synthesis", "output", "presets")
    }
    return await start_server(**fields)


async def _one_shot(wy, server, voice: str, text: str = TEXT) -> tuple[int, np.ndarray, list]:
    async with wy.client(server) as client:
        await client.write_event(Synthesize(text=text, voice=SynthesizeVoice(name=voice)).event())
        events = await wy.read_until(client, "audio-stop")
    return _audio(events)


async def _streamed(wy, server, voice: str, deltas: list[str]) -> tuple[int, np.ndarray, list]:
    async with wy.client(server) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name=voice)).event())
        for delta in deltas:
            await client.write_event(SynthesizeChunk(text=delta).event())
        await client.write_event(
            Synthesize(text="".join(deltas), voice=SynthesizeVoice(name=voice)).event()
        )
        await client.write_event(SynthesizeStop().event())
        events = await wy.read_until(client, "synthesize-stopped")
    return _audio(events)


def _audio(events: list) -> tuple[int, np.ndarray, list]:
    starts = [AudioStart.from_event(e) for e in events if e.type == "audio-start"]
    assert len(starts) == 1
    chunks = [AudioChunk.from_event(e) for e in events if e.type == "audio-chunk"]
    assert {c.rate for c in chunks} == {starts[0].rate}, "every chunk at the announced rate"
    pcm = np.frombuffer(b"".join(c.audio for c in chunks), "<i2")
    return starts[0].rate, pcm, events


def _lag(a: np.ndarray, b: np.ndarray, span: int = 40) -> int:
    """The shift of `b` that best matches `a` (cross-correlation peak within ±span)."""
    x, y = a.astype(np.float64), b.astype(np.float64)
    scores = {
        k: float(np.dot(x[span:-span], np.roll(y, k)[span:-span])) for k in range(-span, span + 1)
    }
    return max(scores, key=scores.__getitem__)


def _first_sound(pcm: np.ndarray) -> int:
    return int(np.flatnonzero(pcm)[0])


def _rms(pcm: np.ndarray) -> float:
    return float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2)))


async def test_a_preset_is_a_voice_with_its_rate_gain_silence_and_chime(
    start_server, wy, tmp_path
) -> None:
    chime = _chime(tmp_path / "ding.wav")
    settings = _settings(
        "--preset",
        f"door={MEI}:High,volume=6dB,lead_silence=0.5,tail_silence=0.25,output_rate=16000,chime=CHIME",
        "--preset",
        f"same16={MEI}:High,output_rate=16000",
        chime=chime,
    )
    server = await _start(start_server, settings)

    async with wy.client(server) as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await wy.read_until(client, "info"))[-1])
    voices = {v.name: v for v in info.tts[0].voices}
    assert MEI in voices and f"{MEI}:High" in voices
    door = voices["door"]
    assert door.languages == ["ja"] and door.installed
    described = door.description or ""
    assert "preset" in described and MEI in described and "16000 Hz" in described
    assert "+6.0 dB" in described and "chime ding.wav" in described

    rate, pcm, _ = await _one_shot(wy, server, "door")
    assert rate == 16000
    ref_rate, ref, _ = await _one_shot(wy, server, "same16")  # same voice and rate, no extras
    assert ref_rate == 16000

    # Chime first: 0.3 s at 22050 Hz, resampled → 4800 samples at 16 kHz, at the preset's gain.
    chime_n = 4800
    assert pcm[:chime_n].any()
    with wave.open(str(chime)) as w:
        chime_peak = np.abs(
            np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.int32)
        ).max()
    assert np.abs(pcm[:chime_n].astype(np.int32)).max() > 1.5 * chime_peak  # +6 dB (limited)
    # Then exactly 0.5 s of silence before the voice's own first sample, and 0.25 s after.
    speech = pcm[chime_n:]
    assert not speech[:8000].any() and not speech[-4000:].any()
    voiced = speech[8000 : speech.size - 4000]
    assert voiced.size == ref.size
    assert _lag(voiced, ref) == 0, "the voice starts exactly 8000 samples after the chime"
    # Gain: +6 dB asked; RMS up by 4-6 dB, peaks limited at -1 dBFS, never clipped.
    gain_db = 20 * math.log10(_rms(voiced) / _rms(ref))
    assert 4.0 < gain_db < 6.1, gain_db
    assert np.abs(pcm.astype(np.int32)).max() <= CEILING
    assert np.abs(ref.astype(np.int32)).max() <= CEILING

    # The plain voice is untouched: its own rate, no silence added.
    plain_rate, plain, _ = await _one_shot(wy, server, f"{MEI}:High")
    assert plain_rate == 48000 and abs(plain.size - 3 * ref.size) <= 3

    # Streaming the same text (in deltas) gives the same audio, bit for bit.
    s_rate, streamed, _ = await _streamed(wy, server, "door", [TEXT])
    assert s_rate == 16000 and np.array_equal(streamed, pcm)


async def test_streamed_in_pieces_equals_one_shot_with_resampling_and_gain(
    start_server, wy
) -> None:
    text = "今日はいい天気ですね。散歩に行きましょう！"
    settings = _settings("--preset", f"loud22={MEI},volume=10,output_rate=22050,lead_silence=0.1")
    server = await _start(start_server, settings)
    rate, one, _ = await _one_shot(wy, server, "loud22", text)
    s_rate, streamed, _ = await _streamed(
        wy, server, "loud22", ["今日はいい天", "気ですね。散歩に", "行きましょう！"]
    )
    assert rate == s_rate == 22050
    # Sentences split at the same places: the same samples (tolerance 0 LSB).
    assert np.array_equal(one, streamed)
    assert np.abs(one.astype(np.int32)).max() <= CEILING  # +20 dB, limited


async def test_preset_synthesis_options_and_server_wide_output_flags(start_server, wy) -> None:
    settings = _settings(
        "--output-rate",
        "24000",
        "--lead-silence",
        "0.2",
        "--volume=-6dB",
        "--preset",
        f"fast={MEI},speed=1.5,lead_silence=0",
    )
    assert settings.output.volume == pytest.approx(10 ** (-6 / 20))
    assert settings.output == OutputDefaults(
        volume=settings.output.volume, lead_silence=0.2, output_rate=24000
    )
    server = await _start(start_server, settings)
    rate, plain, _ = await _one_shot(wy, server, MEI)
    assert rate == 24000
    rate_fast, fast, _ = await _one_shot(wy, server, "fast")
    assert rate_fast == 24000, "a preset inherits the server-wide output rate"
    assert _first_sound(plain) >= 4800 and _first_sound(fast) < 4800, (
        "the preset's lead silence wins"
    )
    assert fast.size < 0.85 * (plain.size - 4800), "speed=1.5 speaks faster"


async def test_loudness_preset_reaches_its_target(start_server, wy) -> None:
    pyloudnorm = pytest.importorskip("pyloudnorm")
    settings = _settings("--preset", f"news={MEI},loudness=-24")
    server = await _start(start_server, settings)
    rate, pcm, _ = await _one_shot(wy, server, "news")
    measured = pyloudnorm.Meter(rate, filter_class="DeMan").integrated_loudness(pcm / 32767.0)
    assert measured == pytest.approx(-24.0, abs=0.3)
    # A stream keeps the gain of its first sentence: every sentence scaled alike.
    s_rate, streamed, _ = await _streamed(
        wy, server, "news", ["玄関のドアが開いています。", "確認してください。"]
    )
    assert s_rate == rate and streamed.size == pcm.size


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        (f"alarm={MEI},colour=red", "--preset 'alarm': unknown key 'colour'"),
        (f"alarm={MEI},volume=loud", "--preset 'alarm': volume expects"),
        (f"alarm={MEI},volume=90dB", "--preset 'alarm': volume must be within"),
        (f"alarm={MEI},output_rate=8000", "--preset 'alarm': output_rate must be one of"),
        (f"alarm={MEI},lead_silence=-1", "--preset 'alarm': lead_silence must be >= 0"),
        (f"alarm={MEI},loudness=5", "--preset 'alarm': loudness must be within -70..0"),
        (f"alarm={MEI},chime=/no/such.wav", "--preset 'alarm': chime: file not found"),
        (f"alarm={MEI},speed=1,speed=2", "--preset 'alarm': key 'speed' is given twice"),
        (f"alarm={MEI},speed", "--preset 'alarm': 'speed' is not KEY=VALUE"),
        (f"alarm={MEI}:", "--preset 'alarm': the style after ':' is empty"),
        ("alarm", "expected NAME=VOICE[:STYLE]"),
        (f"a:b={MEI}", "a preset name has no ':'"),
    ],
)
def test_bad_presets_are_refused_naming_the_preset_and_key(preset, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_settings(["--preset", preset], environ={})
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_preset_defined_twice_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        parse_settings(["--preset", f"a={MEI}", "--preset", f"A={MEI},speed=2"], environ={})
    assert "--preset 'A' is defined twice" in capsys.readouterr().err


def _program(*args: str) -> subprocess.CompletedProcess[str]:
    """The real program, expected to stop at start (it never gets to listen)."""
    return subprocess.run(
        [sys.executable, "-m", "wyoming_hayakoe", "--uri", "tcp://127.0.0.1:0", *args],
        cwd=REPO_ROOT,
        env=program_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_program_refuses_presets_it_cannot_serve_at_start(tmp_path) -> None:
    not_wav = tmp_path / "chime.wav"
    not_wav.write_text("RIFF? no")
    cases = [
        (
            (f"--preset=alarm={MEI}:Shouting",),
            "--preset 'alarm': unknown style 'Shouting' of voice openjtalk-mei; available: ",
        ),
        ((f"--preset={MEI}={MEI},volume=2",), f"--preset '{MEI}': the name is already a voice"),
        (
            (f"--preset=chimed={MEI},chime={not_wav}",),
            f"--preset 'chimed': chime: {not_wav}: not a PCM WAV file",
        ),
        ((f"--chime={not_wav}",), f"--chime: {not_wav}: not a PCM WAV file"),
    ]
    for args, message in cases:
        proc = _program(*args)
        assert proc.returncode == 1, proc.stderr
        assert message in proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_resolved_voice_carries_its_options_merged(embedded) -> None:
    """The catalog merges: a plain voice gets the server-wide synthesis flags, a preset its own
    over them, so every caller passes `resolved.options` as it is."""
    from wyoming_hayakoe.voices import build_catalog

    settings = _settings(
        "--speed", "1.2", "--sentence-silence", "0.4", "--preset", f"fast={MEI},speed=1.5"
    )
    catalog = build_catalog(settings, {MEI: embedded})
    plain = catalog.resolve_exact(MEI)
    assert plain.options["speed"] == 1.2 and plain.options["sentence_silence"] == 0.4
    fast = catalog.resolve_exact("fast")
    assert fast.options["speed"] == 1.5 and fast.options["sentence_silence"] == 0.4


def test_a_preset_of_a_voice_the_library_waits_for_is_kept(embedded_speakers, caplog) -> None:
    """Issue 54 finding 13: a preset of a library voice that is not served (its file gone)
    is kept, with a warning naming both, and serves nothing until the voice is back; a
    voice no one knows still stops the server."""
    import logging

    from wyoming_hayakoe.info import VoiceCatalog
    from wyoming_hayakoe.presets import Preset, PresetError, resolve_presets

    presets = [Preset.parse("alarm=Ann:happy,speed=1.5")]
    with caplog.at_level(logging.WARNING):
        found = resolve_presets(presets, embedded_speakers, waiting=["ann"])
    alarm = found["alarm"]
    assert (alarm.voice, alarm.style, alarm.options["speed"]) == ("ann", "happy", 1.5)
    assert any("alarm" in r.message and "ann" in r.message for r in caplog.records)
    catalog = VoiceCatalog(embedded_speakers, EMBEDDED_VOICE_NAME, presets=found)
    assert "alarm" not in catalog.voice_names()
    assert catalog.in_use(["ann"]) is not None  # once back, it cannot be removed under it
    assert catalog.resolve(None).speaker is embedded_speakers[EMBEDDED_VOICE_NAME]
    with pytest.raises(PresetError, match="unknown voice 'bob'"):
        resolve_presets([Preset.parse("x=bob")], embedded_speakers, waiting=["ann"])
