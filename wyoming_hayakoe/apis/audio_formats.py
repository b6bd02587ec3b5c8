"""int16 mono PCM → the formats OpenAI's ``response_format`` names, piece by piece.

``pcm`` is the raw samples (no header: the rate is part of the contract), ``wav`` a RIFF
header then the samples (sizes ``0xFFFFFFFF`` while streaming, as players accept for a
stream), ``mp3`` / ``opus`` (in Ogg) / ``aac`` (ADTS) / ``flac`` encoded by PyAV (``av``: its
wheels bundle FFmpeg's libraries with LAME and libopus for x86_64 and aarch64; nothing is
fetched at run time). An `Encoder` takes the audio as it is made and hands back the bytes
ready to send, so a stream's first sentence leaves before the second is made.

A streamed ``flac`` carries no length: its STREAMINFO block is sent before the audio exists,
so its total samples are 0 ("unknown", which the FLAC format allows and decoders read to the
end of). A whole answer (`encode_all`, or an `Encoder` made with ``whole=True``) is muxed
into a seekable buffer, so FFmpeg's FLAC muxer goes back and writes the true total samples
(and MD5) there.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np

__all__ = [
    "CONTENT_TYPES",
    "FORMATS",
    "MAX_JOINED_BYTES",
    "MAX_WAV_RATE",
    "Encoder",
    "encode_all",
    "read_wav",
    "wav_bytes",
]

CONTENT_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
FORMATS = tuple(CONTENT_TYPES)

MAX_WAV_RATE = 384_000
"""The highest sample rate of a WAV `read_wav` takes (Hz); the lowest is 1."""
MAX_JOINED_BYTES = 64 * 1024 * 1024
"""The most audio one answer joins (``/connect_waves``: the bytes of the samples of all the
WAVs given, which is the answer's size less its header); past it the request is refused
before anything is joined, however the body came to hold that much."""

# format → (container, codec, sample format of the frames handed to the codec)
_AV = {
    "mp3": ("mp3", "libmp3lame", "s16p"),
    "opus": ("ogg", "libopus", "s16"),
    "aac": ("adts", "aac", "fltp"),
    "flac": ("flac", "flac", "s16"),
}


def _wav_header(rate: int, data_size: int = 0xFFFFFFFF, channels: int = 1) -> bytes:
    riff = 0xFFFFFFFF if data_size == 0xFFFFFFFF else 36 + data_size
    block = 2 * channels
    return (
        b"RIFF"
        + struct.pack("<I", riff)
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * block, block, 16)
        + b"data"
        + struct.pack("<I", data_size)
    )


class _Sink(io.RawIOBase):
    """What the muxer writes, taken away as it comes."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        return len(chunk)

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


class Encoder:
    """One response's encoder: `push` int16 samples → bytes to send now; `finish` → the
    rest. `fmt` one of `FORMATS`; `rate` the samples' rate."""

    def __init__(self, fmt: str, rate: int, whole: bool = False) -> None:
        """`whole`: the bytes are sent only once `finish`ed (`push` keeps them), so the
        container's header can be completed at the end (a FLAC's length)."""
        if fmt not in CONTENT_TYPES:
            raise ValueError(f"unknown format {fmt!r}")
        self.fmt = fmt
        self.rate = rate
        self.content_type = CONTENT_TYPES[fmt]
        self._head_sent = False
        self._container: Any = None
        if fmt in _AV:
            import av

            container_name, codec, sample_format = _AV[fmt]
            self._sink = _Sink()
            self._whole: io.BytesIO | None = io.BytesIO() if whole else None
            target = self._whole if self._whole is not None else self._sink
            self._container = av.open(target, mode="w", format=container_name)
            self._stream = self._container.add_stream(codec, rate=rate)
            self._stream.layout = "mono"
            self._sample_format = sample_format
            self._pts = 0

    def _frame(self, samples: np.ndarray) -> Any:
        import av

        data: np.ndarray
        if self._sample_format == "fltp":
            data = (samples.astype(np.float32) / 32768.0).reshape(1, -1)
        else:
            data = samples.astype(np.int16).reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(data, format=self._sample_format, layout="mono")
        frame.sample_rate = self.rate
        frame.pts = self._pts
        self._pts += samples.size
        return frame

    def push(self, samples: np.ndarray) -> bytes:
        pcm = np.asarray(samples, dtype=np.int16).reshape(-1)
        if self._container is None:
            head = b""
            if self.fmt == "wav" and not self._head_sent:
                head = _wav_header(self.rate)
            self._head_sent = True
            return head + pcm.tobytes()
        if pcm.size:
            for packet in self._stream.encode(self._frame(pcm)):
                self._container.mux(packet)
        return self._sink.take()

    def finish(self) -> bytes:
        if self._container is None:
            return b"" if self._head_sent else self.push(np.zeros(0, np.int16))
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        if self._whole is not None:
            return self._whole.getvalue()
        return self._sink.take()


def encode_all(samples: np.ndarray, rate: int, fmt: str) -> bytes:
    """A whole answer in `fmt` (a ``wav`` with its true sizes, a ``flac`` with its length)."""
    pcm = np.asarray(samples, dtype=np.int16).reshape(-1)
    if fmt == "wav":
        return _wav_header(rate, pcm.size * 2) + pcm.tobytes()
    encoder = Encoder(fmt, rate, whole=True)
    return encoder.push(pcm) + encoder.finish()


def wav_bytes(samples: np.ndarray, rate: int, stereo: bool = False) -> bytes:
    """A WAV file of int16 mono `samples` (the same samples in both channels if `stereo`)."""
    pcm = np.asarray(samples, dtype=np.int16).reshape(-1)
    if stereo:
        pcm = np.repeat(pcm, 2)
    channels = 2 if stereo else 1
    return _wav_header(rate, pcm.size * 2, channels) + pcm.tobytes()


def read_wav(data: bytes) -> tuple[int, int, np.ndarray]:
    """(rate, channels, int16 samples interleaved) of a 16-bit PCM WAV of 1 or 2 channels (as
    VOICEVOX makes them) at 1 to `MAX_WAV_RATE` Hz whose data chunk holds the samples its
    size says; ValueError naming what is wrong else."""
    import wave

    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            rate, channels = w.getframerate(), w.getnchannels()
            width, frames = w.getsampwidth(), w.getnframes()
            if width != 2:
                raise ValueError(f"{8 * width}-bit samples: only 16-bit PCM is taken")
            if channels not in (1, 2):
                raise ValueError(f"{channels} channels: 1 or 2 are taken")
            if not 1 <= rate <= MAX_WAV_RATE:
                raise ValueError(f"sample rate {rate} Hz: 1 to {MAX_WAV_RATE} Hz are taken")
            pcm = w.readframes(frames)
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a WAV file: {exc}") from None
    if len(pcm) != frames * channels * 2:
        raise ValueError(
            f"the data chunk says {frames * channels * 2} bytes of samples; {len(pcm)} are there"
        )
    return rate, channels, np.frombuffer(pcm, np.int16).copy()
