"""`TTS.replace`: a voice's new version built beside the old under the same name, listed in
its place in one step together with the caller's map (`swap`), the old one waited for while a
request holds it, then freed; a `swap` that raises, or a voice that cannot be built, leaves
the old one listed. On the embedded voice (no files, no network: about a second); an AivisHub
file's update through the real program is `tests/server/library/test_library_update.py`."""

from __future__ import annotations

import threading

import pytest

from engine import EMBEDDED_VOICE_NAME, TTS, Speaker

pytestmark = pytest.mark.timeout(120)

MEI = EMBEDDED_VOICE_NAME
WAIT_S = 60


def test_replace_swaps_in_one_step_and_waits_for_the_old_voices_request() -> None:
    tts = TTS().load(MEI).prepare()
    old = tts.speakers[MEI]
    catalog: dict[str, Speaker] = {MEI: old}
    swapped = threading.Event()

    def swap(new: dict[str, Speaker]) -> None:
        assert tts.speakers[MEI] is new[MEI]  # the engine's listing and the caller's, together
        catalog.update(new)
        swapped.set()

    # a request holds the old voice: the swap happens at once, the freeing waits for it
    old.lock.acquire()
    result: list[list[Speaker]] = []
    worker = threading.Thread(
        target=lambda: result.append(tts.replace([MEI], [(MEI, None)], swap=swap, timeout=WAIT_S))
    )
    worker.start()
    try:
        assert swapped.wait(WAIT_S)
        assert catalog[MEI] is not old and worker.is_alive()
    finally:
        old.lock.release()
    worker.join(WAIT_S)
    assert not worker.is_alive()
    (new,) = result[0]
    assert tts.speakers == {MEI: new} and catalog[MEI] is new and new is not old
    assert len(new.generate("はい。").data) > 0


def test_replace_that_fails_leaves_the_old_voice_listed() -> None:
    tts = TTS().load(MEI).prepare()
    old = tts.speakers[MEI]

    def refuse(new: dict[str, Speaker]) -> None:
        raise ValueError("the caller refuses")

    with pytest.raises(ValueError, match="the caller refuses"):
        tts.replace([MEI], [(MEI, None)], swap=refuse)
    assert tts.speakers == {MEI: old}
    with pytest.raises(Exception, match="nowhere"):  # the new voice cannot be built
        tts.replace([MEI], [("ghost", "/nowhere/voice.aivmx")])
    assert tts.speakers == {MEI: old}
    with pytest.raises(KeyError, match="nobody"):
        tts.replace(["nobody"], [(MEI, None)])
    with pytest.raises(ValueError, match="already loaded"):  # a served name not replaced
        tts.replace([], [(MEI, None)])
    assert tts.speakers == {MEI: old}
    assert len(old.generate("はい。").data) > 0
