"""The output stage (`engine.output`): limiter, loudness, resampler, silence, chime — alone,
then through `Speaker` on the embedded voice (generate, stream, agenerate, astream)."""

from __future__ import annotations

import math
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soxr  # type: ignore[import-untyped]

from engine import AudioResult, Chime, OutputOptions, Speaker
from engine.output import (
    OUTPUT_RATES,
    Limiter,
    OutputStage,
    WavError,
    integrated_loudness,
    read_wav,
)
from engine.output.limiter import DEFAULT_CEILING_DB, sliding_min
from engine.text import sentences_of

THREE = "こんにちは。今日はいい天気ですね。散歩に行きましょう！"
CEILING = int(np.rint(10 ** (DEFAULT_CEILING_DB / 20) * 32767))  # -1 dBFS in int16


def _pieces(x: np.ndarray, seed: int = 0) -> list[np.ndarray]:
    """`x` cut at random places (including empty and one-sample pieces)."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, x.size, 12))
    cuts = np.concatenate([cuts, [cuts[3], cuts[3] + 1]])  # an empty and a 1-sample piece
    return np.split(x, np.sort(cuts))


def _run(stage: OutputStage, pieces: list[np.ndarray]) -> np.ndarray:
    out = [stage.push(p, final=(i == len(pieces) - 1)) for i, p in enumerate(pieces)]
    return np.concatenate([*out, stage.finish()])


def _speech_like(rate: int = 48000, seconds: float = 2.0, seed: int = 1) -> np.ndarray:
    """Bursts of harmonics and noise with loud peaks (0.9 of full scale), silence around."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(rate * seconds)) / rate
    tone = sum(
        np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) / k
        for k, f in enumerate((180, 360, 540, 2500), 1)
    )
    x = (tone + 0.2 * rng.standard_normal(t.size)) * (np.sin(2 * np.pi * 3 * t) > 0)
    x[: rate // 10] = 0
    x[-rate // 10 :] = 0
    return (0.9 * x / np.abs(x).max()).astype(np.float32)


# --- limiter ---------------------------------------------------------------------------


def test_sliding_min_matches_the_definition() -> None:
    rng = np.random.default_rng(3)
    for n, w in ((1, 1), (10, 3), (97, 10), (256, 256), (300, 7)):
        x = rng.random(n)
        want = np.array([x[i : i + w].min() for i in range(n - w + 1)])
        assert np.array_equal(sliding_min(x, w), want)


def test_limiter_at_plus_20_db_never_passes_the_ceiling_or_clips() -> None:
    x = _speech_like() * 10.0  # +20 dB: peaks at 9x full scale
    limiter = Limiter(48000)
    y = np.concatenate([limiter.process(p) for p in _pieces(x)] + [limiter.flush()])
    assert y.size == x.size, "the look-ahead delay is given back"
    assert np.abs(y).max() <= limiter.ceiling + 1e-7
    pcm = AudioResult.from_float(48000, y).data
    assert np.abs(pcm.astype(np.int32)).max() <= CEILING
    gain = np.ones_like(x)
    loud = np.abs(x) > 1e-3
    gain[loud] = y[loud] / x[loud]
    assert gain[loud].min() > 0, "no sign flips (wrap-around)"
    assert gain.max() <= 1.0 + 1e-6
    assert limiter.min_gain < 0.2
    # Smooth gain: no step larger than a ramp of the look-ahead length allows.
    steps = np.abs(np.diff(gain.astype(np.float64)))[loud[1:] & loud[:-1]]
    assert steps.max() <= 1.0 / (limiter.delay // 2) + 1e-4
    # No flat tops: a hard clipper pins runs of samples at full scale.
    at_peak = np.abs(pcm.astype(np.int32)) >= CEILING - 1
    runs = np.diff(np.flatnonzero(np.diff(np.concatenate([[0], at_peak, [0]]).astype(int))))[::2]
    assert runs.size and runs.max() <= 3


def test_limiter_leaves_quiet_audio_untouched_and_chunking_changes_nothing() -> None:
    x = _speech_like() * 0.5
    limiter = Limiter(48000)
    y = np.concatenate([limiter.process(x), limiter.flush()])
    assert np.array_equal(y, x) and limiter.min_gain == 1.0
    loud = _speech_like(seed=7) * 6.0
    whole = Limiter(22050)
    a = np.concatenate([whole.process(loud), whole.flush()])
    chunked = Limiter(22050)
    b = np.concatenate([chunked.process(p) for p in _pieces(loud, 5)] + [chunked.flush()])
    assert np.array_equal(a, b)


# --- loudness ---------------------------------------------------------------------------


@pytest.mark.parametrize("rate", OUTPUT_RATES)
def test_loudness_matches_pyloudnorm(rate: int) -> None:
    pyloudnorm = pytest.importorskip("pyloudnorm")
    t = np.arange(rate * 5) / rate
    rng = np.random.default_rng(rate)
    signals = {
        "997 Hz full scale": np.sin(2 * np.pi * 997 * t),
        "noise": 0.05 * rng.standard_normal(t.size),
        "speech-like": _speech_like(rate, 5.0).astype(np.float64),
        "gated bursts": 0.3 * np.sin(2 * np.pi * 4000 * t) * (t % 1 < 0.3),
    }
    for what, x in signals.items():
        ours = integrated_loudness(x, rate)
        # pyloudnorm's "DeMan" filters are the standard's, derived for any rate (as ours)
        exact = pyloudnorm.Meter(rate, filter_class="DeMan").integrated_loudness(x)
        default = pyloudnorm.Meter(rate).integrated_loudness(x)
        assert ours == pytest.approx(exact, abs=0.02), what
        assert ours == pytest.approx(default, abs=0.2), what
    assert integrated_loudness(np.sin(2 * np.pi * 997 * t[: rate * 3]), rate) == pytest.approx(
        -3.01, abs=0.02 if rate >= 44100 else 0.1
    )
    assert integrated_loudness(np.zeros(rate), rate) == -math.inf


# --- stage ------------------------------------------------------------------------------


def test_default_options_pass_the_audio_through() -> None:
    x = _speech_like() * np.float32(32766.3 / 32767 / 0.9)  # peaks just under full scale
    stage = OutputStage(OutputOptions(), 48000)
    assert stage.passthrough and stage.rate == 48000
    assert np.array_equal(_run(stage, _pieces(x)), AudioResult.from_float(48000, x).data)
    assert not stage.limited


def test_default_options_limit_overs_instead_of_clipping() -> None:
    """Peaks past full scale (1.2×) are limited below it, never clipped, in whatever pieces
    they come (each piece's chunk at once, as long); samples far from any peak are exactly
    the voice's."""
    x = _speech_like() * np.float32(1.2 / 0.9)
    whole = OutputStage(OutputOptions(), 48000)
    out = _run(whole, [x])
    clipped = AudioResult.from_float(48000, x).data
    assert whole.limited and out.size == x.size
    assert int(np.abs(out.astype(np.int32)).max()) == 32766
    assert np.count_nonzero(np.abs(clipped.astype(np.int32)) >= 32767) > 100  # as before
    stage = OutputStage(OutputOptions(), 48000)
    pieces = _pieces(x)
    chunks = [stage.push(p, final=False) for p in pieces]
    assert [c.size for c in chunks] == [p.size for p in pieces] and stage.finish().size == 0
    assert int(np.abs(np.concatenate(chunks).astype(np.int32)).max()) <= 32766
    assert np.array_equal(out[:4800], clipped[:4800])  # the silence before the first burst
    level = integrated_loudness(out / 32767.0, 48000)
    assert abs(level - integrated_loudness(clipped / 32767.0, 48000)) < 1.0


@pytest.mark.parametrize("rate", OUTPUT_RATES)
def test_streamed_output_equals_one_shot_at_every_rate(rate: int) -> None:
    """Tolerance: 0 LSB (bit-exact): the resampler, limiter and silences keep state."""
    chime = Chime(
        22050, (0.5 * np.sin(2 * np.pi * 880 * np.arange(4410) / 22050)).astype(np.float32)
    )
    options = OutputOptions(
        volume=10.0, lead_silence=0.25, tail_silence=0.1, sample_rate=rate, chime=chime
    )
    x = _speech_like(44100)
    one = _run(OutputStage(options, 44100), [x])
    streamed = _run(OutputStage(options, 44100), _pieces(x, rate))
    assert np.array_equal(one, streamed)
    lead, tail, chime_n = round(0.25 * rate), round(0.1 * rate), round(4410 * rate / 22050)
    expected = chime_n + lead + round(x.size * rate / 44100) + tail
    assert abs(one.size - expected) <= 1
    assert not one[chime_n : chime_n + lead].any() and not one[-tail:].any()
    assert np.abs(one.astype(np.int32)).max() <= CEILING


def test_resampler_equals_soxr_one_shot_and_keeps_the_tone() -> None:
    rate_in, rate_out = 48000, 16000
    t = np.arange(rate_in) / rate_in
    x = (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    ours = _run(OutputStage(OutputOptions(sample_rate=rate_out), rate_in), _pieces(x))
    ref = AudioResult.from_float(rate_out, soxr.resample(x, rate_in, rate_out, quality="HQ")).data
    assert ours.size == ref.size == rate_out
    assert np.abs(ours.astype(np.int32) - ref).max() <= 1
    spectrum = np.abs(np.fft.rfft(ours[2000:-2000] * np.hanning(ours.size - 4000)))
    assert np.argmax(spectrum) == pytest.approx(1000 * (ours.size - 4000) / rate_out, abs=1)


def test_loudness_one_shot_reaches_the_target_and_streams_hold_one_gain() -> None:
    pyloudnorm = pytest.importorskip("pyloudnorm")
    x = _speech_like(48000, 3.0) * 0.05
    options = OutputOptions(loudness=-20.0)
    one = OutputStage(options, 48000, measure_whole=True)
    out = _run(one, _pieces(x))
    measured = pyloudnorm.Meter(48000, filter_class="DeMan").integrated_loudness(out / 32767.0)
    assert measured == pytest.approx(-20.0, abs=0.1)
    assert not one.limited
    # A stream: gain fixed on the first sentence (here: the first piece marked final).
    stream = OutputStage(options, 48000)
    first, rest = x[:48000], x[48000:]
    held = stream.push(first[:1000], final=False)
    assert held.size == 0 and stream.gain is None, "held back until the sentence is complete"
    a = stream.push(first[1000:], final=True)
    gain = stream.gain
    assert gain is not None and a.size > 0
    b = [stream.push(p, final=False) for p in _pieces(rest)]
    out = np.concatenate([a, *b, stream.finish()])
    assert stream.gain == gain
    plain = AudioResult.from_float(48000, x * gain).data
    assert np.abs(out.astype(np.int32) - plain).max() <= 1, "one gain for the whole stream"


def test_chime_is_resampled_and_played_before_the_lead_silence(tmp_path: Path) -> None:
    rate = 22050
    tone = (0.4 * np.sin(2 * np.pi * 660 * np.arange(rate // 4) / rate)).astype(np.float32)
    stereo = np.stack([tone, tone], axis=1)
    path = tmp_path / "ding.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((stereo * 32767).astype("<i2").tobytes())
    chime = Chime.from_wav(path)
    assert (
        chime.sample_rate == rate
        and chime.samples.shape == (rate // 4,)
        and chime.name == "ding.wav"
    )
    options = OutputOptions(chime=chime, lead_silence=0.1, sample_rate=16000)
    x = _speech_like(48000, 1.0) * 0.5
    out = _run(OutputStage(options, 48000), [x])
    want = AudioResult.from_float(
        16000, soxr.resample(chime.samples, rate, 16000, quality="HQ")
    ).data
    assert np.abs(out[: want.size].astype(np.int32) - want).max() <= 1
    assert not out[want.size : want.size + 1600].any()
    assert out[want.size + 1600 :].any()
    # Nothing to say: no chime either.
    assert _run(OutputStage(options, 48000), [np.zeros(0, np.float32)]).size == 0


def test_wav_reader_reads_pcm_widths_and_names_bad_files(tmp_path: Path) -> None:
    values = np.array([0, 0.5, -0.5, 0.25], np.float64)
    for width, scale, dtype in ((2, 32768, "<i2"), (4, 2**31, "<i4")):
        path = tmp_path / f"w{width}.wav"
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(width)
            w.setframerate(8000)
            w.writeframes((values * scale).astype(dtype).tobytes())
        rate, data = read_wav(path)
        assert rate == 8000 and np.allclose(data, values, atol=1e-4)
    path = tmp_path / "w3.wav"
    ints = (values * 2**23).astype(np.int32)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(3)
        w.setframerate(8000)
        w.writeframes(b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints))
    assert np.allclose(read_wav(path)[1], values, atol=1e-6)
    (tmp_path / "text.wav").write_text("not a wav")
    with pytest.raises(WavError, match="text.wav"):
        read_wav(tmp_path / "text.wav")
    with pytest.raises(WavError, match="missing.wav: file not found"):
        read_wav(tmp_path / "missing.wav")
    with pytest.raises(WavError, match="too long"):
        read_wav(tmp_path / "w2.wav", max_seconds=0.0001)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("volume", 0.0),
        ("volume", math.nan),
        ("loudness", 3.0),
        ("lead_silence", -1.0),
        ("tail_silence", 61.0),
        ("sample_rate", -8000),
    ],
)
def test_bad_output_options_are_refused_by_name(field: str, value: float) -> None:
    values: dict[str, Any] = {field: value}
    with pytest.raises(ValueError, match=f"OutputOptions.{field}"):
        OutputOptions(**values)


# --- through Speaker --------------------------------------------------------------------


def test_speaker_applies_the_output_in_every_api(embedded: Speaker) -> None:
    import asyncio

    options = OutputOptions(volume=2.0, lead_silence=0.2, tail_silence=0.3, sample_rate=24000)
    plain = embedded.generate(THREE)
    shaped = embedded.generate(THREE, output=options)
    assert shaped.sr == 24000 == embedded.output_rate(options)
    lead, tail = 4800, 7200
    assert not shaped.data[:lead].any() and not shaped.data[-tail:].any()
    speech = shaped.data[lead:-tail]
    assert abs(speech.size - round(plain.data.size / 2)) <= 1
    streamed = AudioResult.concat(list(embedded.stream(THREE, output=options)))
    assert np.array_equal(streamed.data, shaped.data)

    async def both() -> tuple[AudioResult, AudioResult]:
        a = await embedded.agenerate(THREE, output=options)
        b = AudioResult.concat([c async for c in embedded.astream(THREE, output=options)])
        return a, b

    a, b = asyncio.run(both())
    assert np.array_equal(a.data, shaped.data) and np.array_equal(b.data, shaped.data)
    # Deltas: the stage spans the batches (one lead, one tail, one resampler).
    deltas = ["こんにちは。今日は", "いい天気ですね。", "散歩に行きましょう！"]
    by_delta = AudioResult.concat(list(embedded.stream(iter(deltas), output=options)))
    assert (
        by_delta.sr == 24000 and not by_delta.data[:lead].any() and not by_delta.data[-tail:].any()
    )
    # Louder, and never past the ceiling.
    ref = AudioResult.from_float(24000, soxr.resample(plain.data / 32767.0, 48000, 24000)).data
    rms = lambda v: float(np.sqrt(np.mean(v.astype(np.float64) ** 2)))  # noqa: E731
    assert 1.5 < rms(speech) / rms(ref) < 2.0  # +6 dB asked; the limiter takes a little
    assert np.abs(shaped.data.astype(np.int32)).max() <= CEILING


def test_ssml_breaks_are_exact_silence_through_the_output_stage(embedded: Speaker) -> None:
    """An SSML break (exact zero samples) keeps its length at the output rate, between the
    lead and tail silence, and the stream equals the one-shot audio."""
    text = '<speak>こんにちは。<break time="500ms"/>さようなら。</speak>'
    options = OutputOptions(volume=2.0, lead_silence=0.1, tail_silence=0.1, sample_rate=16000)
    whole = embedded.generate(text, output=options)
    streamed = AudioResult.concat(list(embedded.stream(text, output=options)))
    assert whole.sr == 16000 and np.array_equal(whole.data, streamed.data)
    assert not whole.data[:1600].any() and not whole.data[-1600:].any()
    silent = np.concatenate([[0], (whole.data == 0).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(silent))
    runs = edges[1::2] - edges[::2]
    # The break is resampled with the speech: the filter's ringing may reach a few samples
    # into it at each edge (a silence added by the stage itself is exact: lead and tail).
    assert 8000 - 16 <= runs.max() <= 8000 + 4000


@pytest.mark.slow
def test_a_neural_voice_streams_windows_through_the_stage() -> None:
    """The small neural voice (44.1 kHz, windows inside sentences: pieces with final=False):
    16 kHz out, loudness held back until the first sentence is complete, then one gain;
    `stream` and `astream` give the same samples (same seed)."""
    import asyncio

    import torch

    from engine.neural.loader import load_neural_voice
    from tests.helpers.voices import ONE_THREAD, FakeBert, shared_small_root

    torch.set_num_threads(1)
    voice = load_neural_voice("small", shared_small_root(), bert=FakeBert(), options=ONE_THREAD)
    speaker = Speaker(voice, rewrite=False)
    assert speaker.sample_rate == 44100
    text = "今日はいい天気ですね。散歩に行きましょう！さようなら。"
    options = OutputOptions(loudness=-20.0, sample_rate=16000, lead_silence=0.05)
    at_16k = OutputOptions(sample_rate=16000)
    pieces = list(
        voice.render(sentences_of(text, rewrite=speaker.rewrite), speaker.options(seed=3))
    )
    assert not pieces[0].final, "the first sentence comes in windows"
    plain = [c.data.size for c in speaker.stream(text, output=at_16k, seed=3)]
    chunks = list(speaker.stream(text, output=options, seed=3))
    assert all(c.sr == 16000 for c in chunks) and all(c.data.size for c in chunks)
    # Without loudness the first window is sent at once; with it, the whole first sentence
    # is measured first and comes as one chunk (after the exact lead silence).
    assert chunks[0].data.size == 800 + plain[0] + plain[1]
    assert not chunks[0].data[:800].any()
    assert [c.data.size for c in chunks[1:]] == plain[2:]

    async def collect() -> list[AudioResult]:
        return [c async for c in speaker.astream(text, output=options, seed=3)]

    again = asyncio.run(collect())
    assert np.array_equal(AudioResult.concat(again).data, AudioResult.concat(chunks).data), (
        "stream and astream give the same samples"
    )
