"""The benchmark scripts' modules (`benchmarks/*.py`), for tests that use or check them.

Benchmark modules import each other by plain name (`from listener import ...`), as they do
when run as scripts; this puts `benchmarks/` on the path once and imports by that name."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from tests.helpers.paths import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    """`benchmarks/<name>.py`, imported as the scripts import it."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.append(str(BENCHMARKS))
    return importlib.import_module(name)
