"""What the benchmark suites share, one module per job:

- `stats`: medians, alternating rounds, per-round ratios, a timed stream, one core kept busy;
- `report`: `Report`, Markdown and JSON tables whose header states the machine, the load
  and the git commit; `log`;
- `cli`: one command line per suite (`python -m benchmarks.SUITE PART`, `--quick`);
- `procs`: the real program (`python -m wyoming_hayakoe`) on loopback, `Server`;
- `voices`: the texts and options, the tests' small voice, the full-size voice (`fullsize`);
- `listener`, `wyoming`: a listener that keeps time, over real Wyoming TCP;
- `memory`: this process's RSS and peak RSS.

This module, `listener` and `memory` use the standard library only: hayakoe's own venv
imports them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "benchmarks" / ".cache"
"""Built voices, venvs and logs (not in git)."""
RESULTS = REPO / "benchmarks" / "results"
"""Recorded results and the notes of retired experiments."""
