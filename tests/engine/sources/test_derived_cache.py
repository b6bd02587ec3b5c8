"""The derived-graph cache's one helper (`engine.sources.cache.derived_dir`, `file_stamp`,
`path_digest`): every maker of derived files (ONNX Runtime's optimised copies, the split
synthesizer, the compacted BERT) and the removal of a library voice find the same folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.bert.compact import target_for
from engine.sources.cache import derived_dir, file_stamp, path_digest
from engine.synth import decoder_split, ort_cache


def test_one_folder_per_source_file_under_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tmp_path / "voices" / "a" / "synthesizer.onnx"
    b = tmp_path / "voices" / "b" / "synthesizer.onnx"
    for f in (a, b):
        f.parent.mkdir(parents=True)
        f.write_bytes(b"graph")
    cache = tmp_path / "cache"
    da, db = derived_dir(a, cache), derived_dir(b, cache)
    # same file name, two voices: two folders, both under <cache>/derived, none beside a voice
    assert da != db and da.parent == db.parent == cache / "derived"
    assert da.name == f"synthesizer-{path_digest(a)}" and len(path_digest(a)) == 16
    # a relative spelling of the same file names the same folder
    monkeypatch.chdir(tmp_path)
    assert derived_dir(Path("voices/a/synthesizer.onnx"), cache) == da
    # the three makers write into it
    assert decoder_split._candidates(a, cache) == [da]
    assert ort_cache._candidates(a, cache)[0].parent == da
    assert target_for(a, cache).parent == da
    assert not da.exists()  # nothing is created by asking


def test_the_stamp_changes_with_the_source_and_the_makers_fields(tmp_path: Path) -> None:
    f = tmp_path / "bert.onnx"
    f.write_bytes(b"12345")
    first = file_stamp(f, format=1, source="x")
    assert first == {"format": 1, "source": "x", "size": 5, "mtime_ns": f.stat().st_mtime_ns}
    assert file_stamp(f, format=2, source="x") != first
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))
    assert file_stamp(f, format=1, source="x") != first
    f.write_bytes(b"123456")
    assert file_stamp(f, format=1, source="x")["size"] == 6
