"""The real program (`python -m wyoming_hayakoe`) on loopback, measured from outside:
`python -m benchmarks.server PART` (`--help`): first-audio, slow-board, rss, soak."""
