"""The benchmarks, one package: run a suite's part with `python -m benchmarks.SUITE PART`
from the repository root (`--help` lists the parts, `--quick` runs every part small to check
the harness). Suites: `engine` (the engine's parts in-process), `server` (the real program
on loopback), `compare` (against hayakoe 1.3.1); `lib` holds what they share. Not installed
with the wheel: it lives beside `engine/` and `wyoming_hayakoe/` in the checkout."""
