"""The benchmark suites' own code, run the way a person runs it (`python -m benchmarks.SUITE
--quick`, in-process): every part small and fast, on the tests' small voice and a tiny BERT
(built once into benchmarks/.cache/). The figures mean nothing here; what is checked is that
every part runs, reports its table under the run's header, and records nothing (a quick run
must not overwrite benchmarks/results/). The server suite: `library-load` here, the others
in tests/benchmarks/test_soak.py and test_slow_board.py.
"""

from __future__ import annotations

import pytest

from benchmarks.lib import RESULTS

pytestmark = pytest.mark.timeout(900)


def _recorded() -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in RESULTS.iterdir()}


@pytest.mark.slow
def test_engine_suite_quick_runs_every_part_and_records_nothing(capsys) -> None:
    from benchmarks.engine.__main__ import PARTS, main

    before = _recorded()
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n## ") + out.startswith("## ") == len(PARTS), out
    assert out.count("at commit ") == len(PARTS)  # every report's header names the commit
    rows = ["| short | generate |", "| short | stream-before |", "| serial t2 |", "| onnx-q8 |"]
    rows += ["| openjtalk run_frontend (baseline) |", "| rewrite, cold |", "| +20 dB |"]
    rows += ["| 1 sentence | engine Speaker.stream |", "| `QLinearLeakyRelu` (table lookup) |"]
    rows += ["| second (kept) |"]
    for row in rows:
        assert row in out, row
    assert "nan" not in out
    assert _recorded() == before


def test_compare_suite_quick_renders_the_recorded_figures(capsys) -> None:
    from benchmarks.compare.__main__ import main

    before = _recorded()
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| measure | text | ours | hayakoe 1.3.1 | ours / hayakoe |" in out
    assert "| RTF `generate()`, idle | medium |" in out  # precision.json, rendered too
    assert _recorded() == before


@pytest.mark.slow
def test_library_load_quick_installs_and_removes_under_load(capsys) -> None:
    from benchmarks.server.__main__ import main

    before = _recorded()
    assert main(["library-load", "--quick"]) == 0  # 0 failed requests
    out = capsys.readouterr().out
    assert "| without installs |" in out and "| during installs and removes |" in out
    assert "| 1 |" in out  # the one install/remove cycle, with its RSS after the remove
    assert "Failed requests: **0**" in out and "nan" not in out
    assert _recorded() == before


@pytest.mark.slow
def test_doors_quick_compares_each_door_against_a_base(capsys) -> None:
    """Against HEAD (any clone has it; CI's may be shallow): a row per door, ratios given."""
    from benchmarks.server.__main__ import main

    before = _recorded()
    assert main(["doors", "--quick", "--base", "HEAD"]) == 0
    out = capsys.readouterr().out
    for door in ("Wyoming one-shot", "page /api/speak", "OpenAI pcm", "VOICEVOX /synthesis"):
        assert f"| idle | {door} |" in out
    assert "nan" not in out
    assert _recorded() == before
