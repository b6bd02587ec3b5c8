"""The engine's parts measured in-process: `python -m benchmarks.engine PART` (`--help`).

frontend, rewrite, bert, stream, overlap, output, embedded, pacing; each prints its figures
as ratios against a baseline measured in the same run."""
