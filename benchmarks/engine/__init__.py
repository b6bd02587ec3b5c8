"""The engine's parts measured in-process: `python -m benchmarks.engine PART` (`--help`)."""
