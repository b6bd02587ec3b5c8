"""`TTS`: register voices, pay every heavy cost once in `prepare`, then hand out `Speaker`s.

    tts = TTS(device="cpu").load("openjtalk-mei").load("jvnv-F1-jp").prepare(warmup=True)
    tts.speakers["jvnv-F1-jp"].generate("こんにちは。").save("out.wav")

The embedded voice (`EMBEDDED_VOICE_NAME`, OpenJTalk's "mei") needs no download and never
imports PyTorch. Every other name is a neural voice: its modules (`engine.sources`,
`engine.bert`, `engine.neural.loader`) are imported only when such a voice is prepared, and one BERT
is shared by all neural speakers of a `TTS`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .int8.background import BackgroundInt8, Int8Upgrade
from .int8.measure import WARMUP_TEXT
from .layout import OFFICIAL_SOURCE
from .openjtalk import EMBEDDED_VOICE_NAME, OpenJTalkVoice
from .options import EngineOptions, Precision, parse_choice
from .progress import StderrProgress
from .speaker import Speaker
from .voice_backend import Voice

if TYPE_CHECKING:  # engine.bert is imported when the first neural voice is prepared
    from .bert import BertBackend
    from .int8.plan import Int8Job, Int8Plan
    from .neural.build import ModelPool, VoiceFiles
    from .text.userdict import UserWord

__all__ = ["TTS"]

_LOGGER = logging.getLogger(__name__)


_WARMUP_TEXT = WARMUP_TEXT
"""Two sentences, about three seconds: long enough that the speed it measures (the playback
guard's first estimate, `Speaker.speed`) is not all start-up cost; `--precision auto` times
its candidates on them too (`engine.int8.measure`)."""


def _wait_idle(speakers: dict[str, Speaker], timeout: float) -> None:
    """Until none of `speakers` has a request in flight, or `timeout` seconds."""
    deadline = time.monotonic() + max(0.0, timeout)
    for name, speaker in speakers.items():
        while speaker.busy and time.monotonic() < deadline:
            time.sleep(0.02)
        if speaker.busy:
            _LOGGER.warning(
                "Voice %s removed with a request still running (after %g s)", name, timeout
            )


def _pairs(voices: Sequence[tuple[str, str | None]], what: str) -> list[tuple[str, str | None]]:
    pairs = [(str(n).strip(), s) for n, s in voices]
    if not pairs:
        raise ValueError(f"{what}: no voices given")
    if any(not n for n, _ in pairs):
        raise ValueError(f"{what}: voice name must be a non-empty string")
    return pairs


@dataclass(frozen=True)
class _Registration:
    name: str
    source: str | None


class TTS:
    """A set of voices sharing one device, one cache and one BERT.

    `device` is ``"cpu"`` (ONNX Runtime) or ``"cuda"``/``"cuda:N"`` (PyTorch). `cache_dir`
    overrides where downloads go (else ``$HAYAKOE_CACHE`` or the default cache). `rewrite`
    turns on the text rewriting pass (times, units, Latin words, user dictionary). `options`
    (`EngineOptions`) holds the tuning knobs: threads, streaming windows, memory, offline.
    `precision` (``"auto"``, ``"fp32"``, ``"int8"``; default: `options.precision`, "auto")
    picks the decoder arithmetic of CPU voices. `progress` (default: `options.progress`,
    on) shows long work on stderr; ``progress=False`` leaves it to `logging`.

    The contract of `prepare`: it pays every heavy cost of what it runs before it returns,
    and starts no long work that was not asked for.

    - ``"auto"`` takes what is already made: a voice whose int8 graphs are in the cache
      (made by ``wyoming-hayakoe quantize``, ``precision="int8"``, or a server's background
      work) runs int8 where their fidelity gate passed (or what a stored measurement chose
      among runtimes); otherwise it runs fp32 at once, and one line on stderr says int8 is
      not made yet, what it gains on this kind of CPU, and how to make it.
    - ``"int8"`` runs int8 when `prepare` returns: graphs not in the cache are made then
      (minutes on a full-size voice; progress on stderr; resumed if an earlier run stopped).
    - With `options.quantize_in_background` (the server's default) or a `background`
      worker, voices whose graphs are missing serve fp32 at once and switch to int8
      between requests once their graphs pass the gate (`engine.int8.background`); that
      work pauses while any request is in flight. `close` (or leaving a ``with`` block,
      or interpreter exit) cancels it, inside ONNX Runtime too, and joins its threads.
    """

    def __init__(
        self,
        device: str = "cpu",
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        bert_source: str = OFFICIAL_SOURCE,
        hf_token: str | None = None,
        rewrite: bool = True,
        options: EngineOptions | None = None,
        precision: Precision | str | None = None,
        progress: bool | None = None,
        background: BackgroundInt8 | None = None,
    ) -> None:
        self.device = device
        self.options = options or EngineOptions()
        if precision is not None:
            chosen = parse_choice(Precision, precision, "TTS precision")
            self.options = replace(self.options, precision=chosen)
        if progress is not None:
            self.options = replace(self.options, progress=progress)
        """Tuning passed to sources, the BERT and every voice (see `engine.options`)."""
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.bert_source = bert_source
        self._hf_token = hf_token
        self.rewrite = rewrite
        self._registered: dict[str, _Registration] = {}
        self._speakers: dict[str, Speaker] = {}
        self._failed: dict[str, Exception] = {}
        self._queued: set[str] = set()  # models whose int8 job went to the background
        self._bert: BertBackend | None = None
        self._background = background
        self._models: ModelPool | None = None
        # the served list changes in one short step under `_changes` (never held while a
        # voice is built); `_builds`: one build at a time (the BERT made once, the model
        # pool's entries); taken alone or inside `_changes`, never the other way round
        self._changes = threading.Lock()
        self._builds = threading.Lock()
        self._pending: set[str] = set()  # names being built by `add` / `replace`
        # long work's progress on stderr (times counted from here), unless asked not to
        self._stderr_progress = StderrProgress() if self.options.progress else None

    def __repr__(self) -> str:  # no token in here
        return (
            f"TTS(device={self.device!r}, voices={list(self._registered)}, "
            f"prepared={list(self._speakers)})"
        )

    # -- registration --------------------------------------------------------------------
    def load(self, name: str, *, source: str | None = None) -> TTS:
        """Register a voice by name (nothing is loaded until `prepare`). Chainable.

        `source` (``hf://user/repo``, ``s3://bucket/prefix``, ``file:///path``, a path) says
        where a neural voice lives; the embedded voice takes none.
        """
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"TTS.load: voice name must be a non-empty string, got {name!r}")
        name = name.strip()
        if name == EMBEDDED_VOICE_NAME and source is not None:
            raise ValueError(
                f"TTS.load: {EMBEDDED_VOICE_NAME!r} is the embedded voice and takes no source "
                f"(got {source!r})"
            )
        previous = self._registered.get(name)
        if previous is not None and previous.source != source and name in self._speakers:
            raise ValueError(
                f"TTS.load: voice {name!r} is already prepared from {previous.source!r}"
            )
        self._registered[name] = _Registration(name, source)
        return self

    @property
    def speakers(self) -> dict[str, Speaker]:
        """Prepared speakers by name (a copy; call `prepare` after `load`)."""
        return dict(self._speakers)

    @property
    def failed(self) -> dict[str, Exception]:
        """Voices that `prepare(skip_failed=True)` could not build, with the reason."""
        return dict(self._failed)

    @property
    def int8_upgrades(self) -> dict[str, Int8Upgrade]:
        """Voices whose int8 graphs are made in the background, with their progress, by
        voice name (every speaker of a multi-speaker file lists the same upgrade)."""
        return self._background.upgrades if self._background is not None else {}

    def measure_again(self, name: str) -> Int8Upgrade:
        """Take the speed measurement of voice `name` (`precision="auto"`: fp32 against int8,
        `engine.int8.measure`) again now, in the background, pausing while requests run;
        every voice of its model then runs the new choice from a request boundary on. Its
        progress is `int8_upgrades[name]` (`measured` is set when it is done). KeyError for
        an unknown voice; ValueError when there is nothing to measure (not `auto`, no int8
        graphs made yet) or they are still being made."""
        speaker = self._speakers.get(name)
        if speaker is None:
            raise KeyError(name)
        models = self._models
        found = models.remeasure(speaker.voice) if models is not None else None
        if models is None or found is None:
            raise ValueError(
                f"voice {name}: no speed measurement to take (it is taken under precision "
                "auto, once the voice's int8 graphs are made)"
            )
        key, job = found
        voices = {id(v) for v in models.voices(key)}
        speakers = [s for s in self._speakers.values() if id(s.voice) in voices]
        return self._worker().measure_again(
            speakers, job, models.target(key), [s.name for s in speakers]
        )

    def close(self) -> None:
        """Stop background work (int8 graphs being made): the step running is cancelled
        (inside ONNX Runtime too, within a fraction of a second) and its threads joined;
        finished steps stay in the cache for the next start. The voices keep serving as
        they are. Idempotent; also run when a ``with`` block ends and at interpreter exit."""
        if self._background is not None:
            self._background.close()

    def __enter__(self) -> TTS:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _busy(self) -> bool:
        """Whether any speaker has a request in flight (background work pauses)."""
        return any(s.busy for s in self._speakers.values())

    @property
    def registered(self) -> list[str]:
        """Names given to `load`, in order."""
        return list(self._registered)

    # -- the heavy part ------------------------------------------------------------------
    def prepare(
        self, *, warmup: bool = False, compile: bool = False, skip_failed: bool = False
    ) -> TTS:
        """Build every registered speaker not built yet (downloads, sessions, BERT).

        `warmup` synthesizes a short sentence with each new speaker so that the first real
        request does not pay first-call costs; `compile` asks neural voices on PyTorch to use
        `torch.compile`. A voice that cannot be built raises, unless `skip_failed`: then
        it is logged as an error, left out of `speakers` and kept in `failed`. Chainable.
        """
        later: dict[str, tuple[Int8Job, list[Speaker]]] = {}
        for reg in self._registered.values():
            if reg.name in self._speakers:
                continue
            try:
                voice, plan, key = self._build_voice(reg, compile=compile)
                speaker = Speaker(
                    voice,
                    rewrite=self.rewrite,
                    playback_guard=self.options.playback_guard != "off",
                    first_clause=self.options.first_clause,
                )
                if warmup:
                    speaker.generate(_WARMUP_TEXT)
            except Exception as exc:
                from .int8.control import Cancelled

                if not skip_failed or isinstance(exc, Cancelled):
                    raise
                self._failed[reg.name] = exc
                _LOGGER.error("Voice %s cannot be used and is left out: %s", reg.name, exc)
                continue
            self._failed.pop(reg.name, None)
            self._speakers[reg.name] = speaker
            note = ""
            if plan is not None and plan.job is not None and key not in self._queued:
                # every speaker of one model (a multi-speaker file) joins the model's one job
                later.setdefault(key, (plan.job, []))[1].append(speaker)
                note = "; int8 graphs are being made in the background, the switch is logged"
            runs = f", runs {speaker.runs}" if speaker.runs else ""
            _LOGGER.info(
                "Voice %s ready%s (styles: %s)%s", reg.name, runs, ", ".join(speaker.styles), note
            )
        self._submit(later)  # a model's speakers switch together
        return self

    def _worker(self) -> BackgroundInt8:
        if self._background is None:
            self._background = BackgroundInt8(threads=max(1, self.options.intra_op_threads // 2))
        if self._background.busy is None:
            self._background.busy = self._busy
        return self._background

    def _build_voice(
        self, reg: _Registration, *, compile: bool
    ) -> tuple[Voice, Int8Plan | None, str]:
        if reg.name == EMBEDDED_VOICE_NAME:
            return OpenJTalkVoice(), None, reg.name
        from .aivm.files import is_aivm_source
        from .aivm.loader import describe_aivm
        from .bert import load_bert
        from .neural.build import BuildSettings, ModelPool
        from .neural.loader import find_native, load_voice_files
        from .sources import parse_source

        if is_aivm_source(reg.source):  # an AivisHub file (engine.aivm)
            files = describe_aivm(
                reg.name,
                reg.source or "",
                device=self.device,
                cache_dir=self.cache_dir,
                token=self._hf_token,
                offline=self.options.offline,
            )
        else:
            src = parse_source(
                reg.source or OFFICIAL_SOURCE,
                cache_dir=self.cache_dir,
                token=self._hf_token,
                offline=self.options.offline,
            )
            files = find_native(reg.name, src, self.device, self.cache_dir)
        if self._bert is None:
            # the voice's graph cut at the decoder (made once, seconds of protobuf and disk)
            # is made while the BERT's session is built (native code, the GIL released)
            with self._deriving(files):
                bert_src = parse_source(
                    self.bert_source,
                    cache_dir=self.cache_dir,
                    token=self._hf_token,
                    offline=self.options.offline,
                )
                self._bert = load_bert(
                    bert_src,
                    self.device,
                    threads=self.options.threads,
                    cache_dir=self.cache_dir,
                    make_derived=self._long_work_asked,
                )
        if self._models is None:
            self._models = ModelPool()
        settings = BuildSettings(
            device=self.device,
            options=self.options,
            compile=compile,
            cache_dir=self.cache_dir,
            defer=self.options.quantize_in_background or self._background is not None,
            progress=self._progress(),
        )
        built = load_voice_files(files, self._bert, settings, self._models)
        return built.voice, built.plan, built.key

    @contextlib.contextmanager
    def _deriving(self, files: VoiceFiles) -> Iterator[None]:
        """The block runs while a thread makes `files`' split graphs (`engine.synth.
        decoder_split.derived_graphs`, cached) where the voice runs on ONNX Runtime; a
        failure there is left for the voice's build to meet and report."""
        onnx = files.onnx
        if onnx is None or (str(self.device).startswith("cuda") and not files.onnx_only):
            yield
            return
        from .synth.decoder_split import derived_graphs

        def derive() -> None:
            try:
                derived_graphs(onnx.synthesizer, self.cache_dir, conv2d=self.options.conv2d)
            except Exception as exc:  # noqa: BLE001 - the build makes them again and says why
                _LOGGER.debug("Deriving %s ahead failed: %s", onnx.synthesizer, exc)

        worker = threading.Thread(target=derive, name="hayakoe-derive", daemon=True)
        worker.start()
        try:
            yield
        finally:
            worker.join()

    @property
    def _long_work_asked(self) -> bool:
        """Whether derived graphs made once per machine (seconds: the compacted BERT) may be
        made in `prepare()`: by the server (it starts once and serves for months) and where
        int8 is asked for (minutes anyway); a script's `auto` takes them from the cache only,
        so its first `prepare()` costs about what hayakoe's does."""
        return self.options.quantize_in_background or self.options.precision == "int8"

    def _progress(self) -> Callable[[str], None] | None:
        """Where long work's progress lines go: stderr (`engine.progress`) unless
        `options.progress` is off (then `logging`, at INFO)."""
        return self._stderr_progress

    def pre_download(self, device: str | None = None) -> list[Path]:
        """Fetch every registered neural voice (and the BERT) into the cache, loading nothing.

        For images built with voices baked in: `device` picks which backend's files are
        fetched (default: this TTS's device). Returns the local folders.
        """
        names = [r for r in self._registered.values() if r.name != EMBEDDED_VOICE_NAME]
        if not names:
            return []
        from .download import pre_download

        return pre_download(
            [(r.name, r.source or OFFICIAL_SOURCE) for r in names],
            device=device or self.device,
            cache_dir=self.cache_dir,
            bert_source=self.bert_source,
            token=self._hf_token,
            offline=self.options.offline,
        )

    # -- voices added and removed while others serve --------------------------------------
    def add(
        self, voices: Sequence[tuple[str, str | None]], *, warmup: bool = False
    ) -> list[Speaker]:
        """Add voices to a prepared `TTS` while its other voices serve: `voices` are
        ``(name, source)`` pairs, all the speakers of one file, which come together or not at
        all. Every heavy cost (download, sessions, derived graphs, `warmup`) is paid before
        any of them is listed in `speakers`, outside the lock that guards that list (a
        `remove`, another `add`'s listing, a reader never wait for a build); then they are
        listed in one step. int8 graphs still to be made are made in the background as
        `prepare` does. A name already registered or being added raises `ValueError`; a
        voice that cannot be built raises, and none of `voices` is listed. Returns the new
        speakers, in order. Thread-safe against other adds and removes."""
        pairs = _pairs(voices, "TTS.add")
        with self._changes:
            taken = [n for n, _ in pairs if self._taken(n)]
            if taken:
                raise ValueError(f"TTS.add: voice {taken[0]!r} is already loaded")
            self._pending.update(n for n, _ in pairs)
        try:
            built, jobs = self._build_speakers(pairs, warmup)
            try:
                with self._changes:
                    self._list(pairs, built, jobs, ())
            except BaseException:
                self._forget(built.values())
                raise
        finally:
            with self._changes:
                self._pending.difference_update(n for n, _ in pairs)
        _LOGGER.info("Voices added: %s", ", ".join(built))
        return list(built.values())

    def _taken(self, name: str) -> bool:
        """`name` is registered, served or being built (under `_changes`)."""
        return name in self._registered or name in self._speakers or name in self._pending

    def replace(
        self,
        old: Sequence[str],
        voices: Sequence[tuple[str, str | None]],
        *,
        swap: Callable[[dict[str, Speaker]], None] | None = None,
        warmup: bool = False,
        timeout: float = 30.0,
    ) -> list[Speaker]:
        """Replace the prepared voices `old` by `voices` (a new version of one file) while
        every voice serves, the new ones under the same names or others. The new speakers
        are built beside the old ones, every heavy cost paid as `add` pays it (outside the
        lock of the served list); one that cannot be built raises and the old voices stay
        as they were. Then, in one step, the new take the old ones' place in `speakers`, and
        `swap(new speakers by name)` is called inside that step so a caller's own map of
        voices changes with it (a `swap` that raises undoes the step: the old voices stay,
        the new are freed). Then requests already using the old voices finish (up to
        `timeout` seconds) and the old are freed as `remove` frees them. Unknown `old` names
        raise `KeyError` (also when one was removed while the new were built: nothing
        changes), a name of `voices` loaded and not in `old` raises `ValueError`, before
        anything is built. Returns the new speakers."""
        pairs = _pairs(voices, "TTS.replace")
        leaving = set(old)
        with self._changes:
            self._check_replace(old, pairs)
            fresh = {n for n, _ in pairs if n not in leaving}
            self._pending.update(fresh)
        try:
            built, jobs = self._build_speakers(pairs, warmup)
            try:
                with self._changes:
                    gone = self._swap_in(old, pairs, built, jobs, swap)
            except BaseException:
                self._forget(built.values())
                raise
        finally:
            with self._changes:
                self._pending.difference_update(fresh)
        _LOGGER.info("Voices replaced: %s by %s", ", ".join(old), ", ".join(built))
        self._retire(gone, timeout)
        return list(built.values())

    def _check_replace(self, old: Sequence[str], pairs: list[tuple[str, str | None]]) -> None:
        """`replace`'s refusals (under `_changes`): `old` not all served, a new name taken."""
        missing = [n for n in old if n not in self._speakers]
        if missing:
            raise KeyError(f"TTS.replace: voice {missing[0]!r} is not loaded")
        taken = [n for n, _ in pairs if n not in set(old) and self._taken(n)]
        if taken:
            raise ValueError(f"TTS.replace: voice {taken[0]!r} is already loaded")

    def _swap_in(
        self,
        old: Sequence[str],
        pairs: list[tuple[str, str | None]],
        built: dict[str, Speaker],
        jobs: dict[str, tuple[Int8Job, list[Speaker]]],
        swap: Callable[[dict[str, Speaker]], None] | None,
    ) -> dict[str, Speaker]:
        """`built` listed in place of `old` and `swap` told, in one step (under `_changes`);
        the old speakers, now unlisted. Raises, changing nothing, when an old voice left
        meanwhile or `swap` raises."""
        missing = [n for n in old if n not in self._speakers]
        if missing:
            raise KeyError(f"TTS.replace: voice {missing[0]!r} was removed meanwhile")
        gone = {n: self._speakers[n] for n in old}
        before = (dict(self._registered), self._speakers)
        self._list(pairs, built, {}, old)
        if swap is not None:
            try:
                swap(dict(built))
            except BaseException:
                self._registered, self._speakers = before
                raise
        self._submit(jobs)
        return gone

    def remove(self, names: Sequence[str], *, timeout: float = 30.0) -> list[str]:
        """Remove prepared voices while the others serve (all the speakers of one file
        together): they leave `speakers` at once, requests already using them finish
        (waited for up to `timeout` seconds; one still running then keeps what it holds
        until it ends), then their sessions are freed (the shared BERT stays) and the C heap
        handed back. Unknown names raise `KeyError` and nothing is removed. Returns the
        names removed."""
        with self._changes:
            missing = [n for n in names if n not in self._speakers]
            if missing:
                raise KeyError(f"TTS.remove: voice {missing[0]!r} is not loaded")
            gone = {n: self._speakers[n] for n in names}
            self._speakers = {n: s for n, s in self._speakers.items() if n not in gone}
            for name in gone:
                self._registered.pop(name, None)
        self._retire(gone, timeout)
        _LOGGER.info("Voices removed: %s", ", ".join(names))
        return list(names)

    def _build_speakers(
        self, pairs: list[tuple[str, str | None]], warmup: bool
    ) -> tuple[dict[str, Speaker], dict[str, tuple[Int8Job, list[Speaker]]]]:
        """Speakers for `pairs`, not listed yet, and the int8 jobs they wait for by model
        (under `_builds` alone: the served list is not locked meanwhile); on a failure those
        built are forgotten and it raises."""
        built: dict[str, Speaker] = {}
        jobs: dict[str, tuple[Int8Job, list[Speaker]]] = {}
        with self._builds:
            try:
                for name, source in pairs:
                    reg = _Registration(name, source)
                    voice, plan, key = self._build_voice(reg, compile=False)
                    speaker = Speaker(
                        voice,
                        rewrite=self.rewrite,
                        playback_guard=self.options.playback_guard != "off",
                        first_clause=self.options.first_clause,
                    )
                    built[name] = speaker
                    if warmup:
                        speaker.generate(_WARMUP_TEXT)
                    if plan is not None and plan.job is not None:
                        jobs.setdefault(key, (plan.job, []))[1].append(speaker)
            except BaseException:
                if self._models is not None:
                    self._models.discard([s.voice for s in built.values()])
                raise
        return built, jobs

    def _forget(self, speakers: Iterable[Speaker]) -> list[str]:
        """Speakers never listed or no longer listed taken out of the model pool; the keys
        of the models dropped with them (takes `_builds`: not while a build runs)."""
        with self._builds:
            if self._models is None:
                return []
            return self._models.discard([s.voice for s in speakers])

    def _list(
        self,
        pairs: list[tuple[str, str | None]],
        built: dict[str, Speaker],
        jobs: dict[str, tuple[Int8Job, list[Speaker]]],
        old: Sequence[str],
    ) -> None:
        """`built` listed in `speakers` in place of `old`, in one step (a new dict: readers
        never see one change); `jobs` handed to the background, but for a model whose job
        went there meanwhile (under `_changes`)."""
        registered = {n: r for n, r in self._registered.items() if n not in old}
        for name, source in pairs:
            registered[name] = _Registration(name, source)
        speakers = {n: s for n, s in self._speakers.items() if n not in old}
        self._registered = registered
        self._speakers = {**speakers, **built}
        self._submit(jobs)

    def _submit(self, jobs: dict[str, tuple[Int8Job, list[Speaker]]]) -> None:
        """Each model's job to the background, with its voices (the pool's target), which
        switch together; a model already queued keeps its one job."""
        for key, (job, speakers) in jobs.items():
            if key in self._queued:
                continue
            if self._models is None:  # only a neural voice has a job, built into the pool
                raise RuntimeError(f"voice {key}: an int8 job without its model")
            target = self._models.target(key)
            self._worker().submit(speakers, job, target, [s.name for s in speakers])
            self._queued.add(key)

    def _retire(self, gone: dict[str, Speaker], timeout: float) -> None:
        """Speakers no longer listed: their requests waited for, their models freed."""
        _wait_idle(gone, timeout)
        dropped = self._forget(gone.values())
        with self._changes:
            self._queued.difference_update(dropped)
        gone.clear()
        import gc

        from .heap import trim_heap

        gc.collect()
        trim_heap()

    # -- dictionary ----------------------------------------------------------------------
    def add_word(
        self,
        *,
        surface: str,
        reading: str,
        accent: int | None = None,
        priority: int = 5,
        pos: str = "proper_noun",
    ) -> UserWord:
        """Teach the frontend a word: surface form, katakana reading, accent nucleus (None:
        guessed), `priority` and `pos` as `engine.text.userdict.add_word` takes them.
        Process-wide (OpenJTalk has one dictionary)."""
        from .text.userdict import add_word

        return add_word(surface=surface, reading=reading, accent=accent, priority=priority, pos=pos)

    def load_user_dictionary(self, path: str | os.PathLike[str]) -> int:
        """Load a user dictionary file (CSV or JSON, see `engine.text.userdict`); returns
        how many words it held. Process-wide, like `add_word`."""
        from .text.userdict import load_user_dictionary

        return int(load_user_dictionary(Path(path)))

    def watch_user_dictionaries(self, paths: Sequence[str | os.PathLike[str]]) -> int:
        """Load dictionary files and keep them in step: a changed file is reloaded before
        the next request, bad entries are skipped with a warning naming file and line
        (`engine.text.userdict_watch`). Returns how many words the files hold."""
        from .text.userdict_watch import watch_user_dictionaries

        return len(watch_user_dictionaries([Path(p) for p in paths]).surfaces)
