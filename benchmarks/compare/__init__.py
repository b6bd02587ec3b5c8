"""Our engine against hayakoe 1.3.1 (its CPU/ONNX path), side by side on the same files and
texts: `python -m benchmarks.compare PART` (`--help`): side-by-side, precision, render."""
