"""How much audio a render call still has to make, as it goes (for `AudioPiece.remaining`
and `AudioPiece.tail`, read by the request's pacing in `engine.pacing`).

A sentence's length is exact once its durations are predicted (the front graph runs before
its decoder); a sentence not reached yet is estimated from its number of phone ids at the
frames per id of the sentences already predicted in this call (speed, voice and style
included). The largest piece still to come follows the decoder's window plan: audio
arrives window by window, and a listener needs the whole of the last one in hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..synth.windowed import WindowPlan

DEFAULT_FRAMES_PER_ID = 6.0
"""Frames per blank-interspersed phone id before anything is predicted (about what
JP-Extra voices predict at speed 1; replaced by the call's own figure at its first
sentence)."""


class RenderProgress:
    """Audio still to come in one render call: `ids[i]` phone ids per sentence (0 for a
    sentence with nothing to say), `frame_s` seconds per latent frame."""

    def __init__(self, ids: Sequence[int], frame_s: float, pause_s: float) -> None:
        self.ids = list(ids)
        self.frame_s = frame_s
        self.pause_s = pause_s
        self._frames: dict[int, int] = {}  # predicted frames of the sentences reached

    def predicted(self, i: int, frames: int) -> None:
        """Sentence `i`'s durations are known: `frames` latent frames."""
        self._frames[i] = int(frames)

    def _per_id(self) -> float:
        ids = sum(self.ids[i] for i in self._frames)
        return sum(self._frames.values()) / ids if ids else DEFAULT_FRAMES_PER_ID

    def _later(self, i: int) -> list[int]:
        """Estimated frames of the sentences after `i` that have something to say."""
        per_id = self._per_id()
        return [round(n * per_id) for n in self.ids[i + 1 :] if n > 0]

    def after(
        self,
        i: int,
        done: int,
        frames: int,
        window: tuple[WindowPlan | None, int] | None,
        plan: WindowPlan | None,
    ) -> tuple[float, float]:
        """(remaining, tail) in seconds after sentence `i` has made `done` of its `frames`
        frames; `window` is (its plan, the size of its last window) when it is decoded in
        windows, `plan` the windows of the sentences after it (None: whole sentences)."""
        later = self._later(i)
        left = frames - done
        remaining = (left + sum(later)) * self.frame_s + self.pause_s * len(later)
        own_plan, last_size = window if window is not None else (None, 0)
        sizes = [
            *_windows_after(left, last_size, own_plan),
            *(w for n in later for w in _windows_after(n, 0, plan)),
        ]
        return remaining, max(sizes, default=0) * self.frame_s


def _windows_after(frames: int, last_size: int, plan: WindowPlan | None) -> list[int]:
    """Window sizes for `frames` frames still to decode after a window of `last_size`
    (0: a new sentence), growing as `plan` grows them (None: one piece)."""
    if frames <= 0:
        return []
    if plan is None:
        return [frames]
    if last_size <= 0:
        return [end - start for start, end in plan.windows(frames)]
    out: list[int] = []
    size = plan.grown(last_size)
    while frames > 0:
        take = frames if frames - size < plan.min_tail else min(size, frames)
        out.append(take)
        frames -= take
        size = plan.grown(size)
    return out
