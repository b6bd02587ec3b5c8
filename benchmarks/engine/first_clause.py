"""What ending a stream's first part at a clause mark costs in prosody, by threshold: each
reply of `benchmarks.lib.texts.LLM_REPLIES` whose first sentence has a clause mark, spoken
from 2-character deltas with `first_clause=N` against the same reply spoken whole, aligned
in time by DTW over log-mel frames: mean log-mel distance (dB) and F0 distance (RMS over
frames voiced in both, cents). Yardstick, same run: the whole reply against itself 5 %
faster (a change nobody calls a defect).

    python -m benchmarks.engine first_clause --thresholds 0,2,4,8,12

The embedded OpenJTalk voice: a trained HTS voice, so the figures mean something (the
neural voices here have random weights; their first-audio gain is measured by
`python -m benchmarks.server llm-pace`). Only replies the threshold really cuts count in its
row (`cut`), against the same replies' yardstick.
"""

from __future__ import annotations

import argparse
import statistics
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.lib.report import Report
from benchmarks.lib.texts import LLM_REPLIES
from engine.int8.gate import FLOOR_DB, log_mel_db

if TYPE_CHECKING:
    from engine import Speaker

RESULT = "first-clause-prosody"
DELTA_CHARS = 2


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--thresholds", default="2,4,8,12", help="first_clause values (0: whole)")


def spoken(speaker: Speaker, text: str, first_clause: int, speed: float = 1.0) -> np.ndarray:
    """`text` from 2-character deltas, as float samples."""
    speaker.first_clause = first_clause
    deltas = [text[i : i + DELTA_CHARS] for i in range(0, len(text), DELTA_CHARS)]
    pcm = [c.data for c in speaker.stream(iter(deltas), guard=False, seed=1, speed=speed)]
    return np.concatenate(pcm).astype(np.float32) / 32768.0


def parts(speaker: Speaker, text: str, first_clause: int) -> int:
    """How many parts the pipeline made of the reply's first sentence (2: it was cut)."""
    from engine.text.pipeline import TextPipeline

    pipeline = TextPipeline(first_clause=first_clause)
    made = []
    for i in range(0, len(text), DELTA_CHARS):
        made += pipeline.feed(text[i : i + DELTA_CHARS])
    made += pipeline.close()
    return 2 if made and made[0].clause else 1


def dtw_path(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int]]:
    """Frame pairs aligning `a` [n, d] with `b` [m, d] (Euclidean cost; steps right, down,
    diagonal)."""
    cost = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            acc[i, j] = cost[i - 1, j - 1] + min(acc[i - 1, j], acc[i, j - 1], acc[i - 1, j - 1])
    i, j, path = n, m, []
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        step = int(np.argmin([acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]]))
        i, j = (i - 1, j - 1) if step == 0 else (i - 1, j) if step == 1 else (i, j - 1)
    return path[::-1]


def f0_track(audio: np.ndarray, sr: int, hop: int, lo: float = 70.0, hi: float = 500.0):
    """F0 per frame by normalised autocorrelation (0 where unvoiced)."""
    win = int(0.04 * sr)
    out = []
    for start in range(0, max(1, len(audio) - win), hop):
        x = audio[start : start + win] - audio[start : start + win].mean()
        energy = float((x * x).sum())
        if energy < 1e-6:
            out.append(0.0)
            continue
        ac = np.correlate(x, x, "full")[win - 1 :] / energy
        a, b = int(sr / hi), min(int(sr / lo), win - 1)
        lag = a + int(np.argmax(ac[a:b]))
        out.append(sr / lag if ac[lag] > 0.5 else 0.0)
    return np.asarray(out)


def distances(ref: np.ndarray, test: np.ndarray, sr: int) -> tuple[float, float]:
    """(mean log-mel dB, F0 RMS cents) between two renderings, aligned by DTW; spectra
    floored `FLOOR_DB` below the reference's loudest bin."""
    hop = 256 * sr // 22050
    a, b = log_mel_db(ref, sr), log_mel_db(test, sr)  # [frames, mels]
    floor = a.max() - FLOOR_DB  # as the int8 gate: what lies below is inaudible (and a
    a, b = np.maximum(a, floor), np.maximum(b, floor)  # pause of zeros is not -200 dB apart)
    path = dtw_path(a[::2], b[::2])
    mel = float(np.mean([np.abs(a[2 * i] - b[2 * j]).mean() for i, j in path]))
    fa, fb = f0_track(ref, sr, hop), f0_track(test, sr, hop)
    scale_a, scale_b = len(fa) / max(1, len(a)), len(fb) / max(1, len(b))
    cents = []
    for i, j in path:
        x = fa[min(len(fa) - 1, int(2 * i * scale_a))]
        y = fb[min(len(fb) - 1, int(2 * j * scale_b))]
        if x > 0 and y > 0:
            cents.append(1200 * np.log2(y / x))
    return mel, float(np.sqrt(np.mean(np.square(cents)))) if cents else float("nan")


def run(args: argparse.Namespace) -> Report:
    from engine import EMBEDDED_VOICE_NAME, TTS

    report = Report("Prosody cost of the first part at a clause mark")
    thresholds = [int(x) for x in args.thresholds.split(",") if int(x) > 0]
    replies = LLM_REPLIES[:4] if args.quick else LLM_REPLIES
    speaker = TTS(progress=False).load(EMBEDDED_VOICE_NAME).prepare().speakers[EMBEDDED_VOICE_NAME]
    sr = speaker.sample_rate
    whole = {t: spoken(speaker, t, 0) for t in replies}
    yard = {t: distances(whole[t], spoken(speaker, t, 0, speed=1.05), sr) for t in replies}
    rows, data = [], {}
    for n in thresholds:
        cut = [t for t in replies if parts(speaker, t, n) == 2]
        found = {t: distances(whole[t], spoken(speaker, t, n), sr) for t in cut}
        data[n] = {"cut": cut, "distances": found}
        if not cut:
            rows.append([n, 0, "", "", "", ""])
            continue
        mel = statistics.mean(found[t][0] for t in cut)
        f0 = statistics.mean(found[t][1] for t in cut)
        ymel = statistics.mean(yard[t][0] for t in cut)
        yf0 = statistics.mean(yard[t][1] for t in cut)
        rows.append(
            [n, len(cut), f"{mel:.2f}", f"{f0:.0f}", f"{mel / ymel:.2f}", f"{f0 / yf0:.2f}"]
        )
    report.note(
        f"Voice {EMBEDDED_VOICE_NAME} (trained HTS); {len(replies)} replies; a row counts the "
        "replies its threshold cuts. Ratios: against the yardstick (the same replies spoken "
        "whole 5 % faster) in this run."
    )
    report.table(
        [
            "first_clause",
            "cut",
            "log-mel dB",
            "F0 cents",
            "log-mel / 5 % faster",
            "F0 / 5 % faster",
        ],
        rows,
    )
    report.data.update({"yardstick": yard, "thresholds": data})
    return report
