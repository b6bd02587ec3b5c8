"""`wyoming-hayakoe dict check` (`wyoming_hayakoe.commands.dict`): every bad line reported."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import DATA

GOLDEN = DATA / "frontend_golden.jsonl"


def test_dict_check_command_reports_every_bad_line(tmp_path: Path, capsys) -> None:
    from wyoming_hayakoe.__main__ import main

    good = tmp_path / "good.csv"
    good.write_text("鬼滅,キメツ,0\n", encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text("鬼滅,キメツ,0\n鬼,kimetsu\n早声,ハヤコエ,9\n一\n", encoding="utf-8")
    assert main(["dict", "check", str(good)]) == 0
    assert main(["dict", "check", str(good), str(bad), str(tmp_path / "none.csv")]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert [line.split(" ")[0].rstrip(":") for line in lines[:3]] == [
        f"{bad}:2",
        f"{bad}:3",
        f"{bad}:4",
    ]
    assert "none.csv" in out.out and "cannot read" in out.out
    assert f"{bad}: 1 word(s) ok, 3 problem(s)" in out.err


async def test_dict_check_reports_a_word_past_the_bounds_without_crashing(tmp_path: Path) -> None:
    """A 5,000-character surface (issue 54) is a problem on its line, in a process that lives
    (checking it once ran OpenJTalk's frontend on it: a segfault)."""
    from tests.helpers.program import run_program

    path = tmp_path / "words.csv"
    path.write_text(f"鬼滅,キメツ,0\n{'a' * 5000},エー\n早声,{'ハ' * 65}\n", encoding="utf-8")
    done = await run_program("dict", "check", str(path))
    assert done.returncode == 1, done.stderr
    assert done.stdout.decode().splitlines() == [
        f"{path}:2: surface must be at most 64 characters, got 5000",
        f"{path}:3 ('早声'): reading must be at most 64 characters, got 65",
    ]
    assert f"{path}: 1 word(s) ok, 2 problem(s)" in done.stderr
