"""`TTS.add` / `TTS.remove` on a prepared `TTS` while other voices serve: the speakers of one
`.aivmx` come and go together, a request in flight on a removed voice finishes, a voice that
cannot be built lists nothing, the shared BERT stays. (Memory returning after a remove is
measured in `benchmarks/server/library.py`, not here.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engine import TTS, EngineOptions
from engine.aivm.loader import voices_of_file

pytestmark = pytest.mark.timeout(300)


def _tts(layout_root: Path, cache: Path) -> TTS:
    opts = EngineOptions(threads=1, precision="fp32")
    return TTS("cpu", cache_dir=cache, bert_source=str(layout_root), options=opts)


def test_a_file_added_and_removed_while_another_voice_serves(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    tts = _tts(layout_root, tmp_path / "cache")
    tts.load("openjtalk-mei").prepare()
    pairs = voices_of_file(str(aivm_files.multi), "duo")
    added = tts.add(pairs)
    assert [s.name for s in added] == ["duo-alice", "duo-bob"]
    assert set(tts.speakers) == {"openjtalk-mei", "duo-alice", "duo-bob"}
    bert = tts._bert
    assert bert is not None
    with pytest.raises(ValueError, match="duo-alice"):
        tts.add(pairs)

    # a request in flight on a voice being removed: the remove waits for it, it finishes
    stream = tts.speakers["duo-bob"].stream("こんにちは。今日はいい天気です。明日も晴れます。")
    first = next(stream)
    assert tts.speakers["duo-bob"].busy
    removed: list[list[str]] = []
    remover = threading.Thread(
        target=lambda: removed.append(tts.remove(["duo-alice", "duo-bob"], timeout=120))
    )
    remover.start()
    deadline = time.monotonic() + 60
    while "duo-bob" in tts.speakers:  # listed no more at once, before the request ends
        assert time.monotonic() < deadline, "the voice stayed listed"
        time.sleep(0.01)
    assert not removed  # still waiting for the request in flight
    rest = list(stream)
    remover.join(120)
    assert removed == [["duo-alice", "duo-bob"]]
    assert sum(len(c.data) for c in [first, *rest]) > 0.5 * first.sr
    assert set(tts.speakers) == {"openjtalk-mei"}
    assert tts._models is not None and not tts._models._models  # its sessions dropped
    assert tts._bert is bert  # the shared BERT stays
    assert len(tts.speakers["openjtalk-mei"].generate("はい。").data) > 0
    with pytest.raises(KeyError, match="duo-bob"):
        tts.remove(["duo-bob"])

    # added again after its removal: speaks
    again = tts.add(pairs[:1])
    assert len(again[0].generate("もう一度。").data) > 0.2 * again[0].sample_rate
    tts.close()


def test_a_voice_that_cannot_be_built_lists_nothing(
    aivm_files, layout_root: Path, tmp_path: Path
) -> None:
    tts = _tts(layout_root, tmp_path / "cache")
    tts.load("openjtalk-mei").prepare()
    broken = tmp_path / "broken.aivmx"
    broken.write_bytes(aivm_files.one.read_bytes()[:5000])
    good = voices_of_file(str(aivm_files.one), "one")
    with pytest.raises(Exception, match="broken.aivmx"):
        tts.add([*good, ("two", str(broken))])
    assert set(tts.speakers) == {"openjtalk-mei"}
    assert "one" not in tts.registered
    tts.close()


def test_a_build_holds_no_lock_of_the_served_list(
    aivm_files, layout_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While `add` builds a voice (held here until the test lets it go on), the served list
    is not locked: another voice is unlisted by `remove` at once, the same name added again
    is refused at once (it is being built), and the built voice is listed in one step."""
    tts = _tts(layout_root, tmp_path / "cache")
    tts.load("openjtalk-mei").prepare()
    tts.add(voices_of_file(str(aivm_files.multi), "duo"))
    building, go = threading.Event(), threading.Event()
    build = tts._build_voice

    def held(*args: object, **kwargs: object) -> object:
        building.set()
        assert go.wait(120), "never let go on"
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tts, "_build_voice", held)
    one = voices_of_file(str(aivm_files.one), "one")
    added: list[object] = []
    adder = threading.Thread(target=lambda: added.append(tts.add(one)))
    adder.start()
    try:
        assert building.wait(60)
        removed: list[list[str]] = []
        remover = threading.Thread(
            target=lambda: removed.append(tts.remove(["duo-alice", "duo-bob"], timeout=60))
        )
        remover.start()
        deadline = time.monotonic() + 30
        while "duo-bob" in tts.speakers:  # unlisted while the build is still held
            assert time.monotonic() < deadline, "remove waited for another voice's build"
            time.sleep(0.01)
        with pytest.raises(ValueError, match="one"):
            tts.add(one)  # being built: refused at once, not queued behind the build
        assert set(tts.speakers) == {"openjtalk-mei"}  # nothing of the build listed yet
    finally:
        go.set()
        adder.join(120)
    remover.join(120)
    assert removed == [["duo-alice", "duo-bob"]]
    assert len(added) == 1
    assert set(tts.speakers) == {"openjtalk-mei", one[0][0]}
    assert len(tts.speakers[one[0][0]].generate("はい。").data) > 0
    tts.close()
