"""Installs and removes under load: a server speaking one voice to a steady stream of Wyoming
requests while a full-size `.aivmx` is installed from a stand-in AivisHub on loopback and
removed again, `--cycles` times (issue 35's "Done when").

    python -m benchmarks.server library-load            # full size, idle
    python -m benchmarks.server library-load --busy     # one other core kept busy

One server process (the real program, `--precision fp32`) serves the full-size neural voice
(`benchmarks.lib.fullsize`: the real JP-Extra shapes, random weights) with its library on.
A client sends one-shot requests back to back on that voice, the whole run long: first for
`--baseline` requests with nothing else happening (the baseline), then while the page's
HTTP API installs the `.aivmx` (the same network, random weights, written by aivmlib as
AivisHub publishes it; built once into benchmarks/.cache/library-load/) and removes it,
`--cycles` times (one request on the installed voice each time), then `--baseline` requests
again. Reported: failed requests (must be 0), first audio median and p90 with and
without installs and their ratio (target ≤ 1.5×), each install's and remove's time, and the
server's RSS before the first install and after each remove (target ≤ 1.10×). `--quick`: the
tests' small voice and a small `.aivmx`, one cycle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.lib import CACHE, RESULTS
from benchmarks.lib.procs import Server
from benchmarks.lib.report import Report, log
from benchmarks.lib.stats import busy_core, median
from benchmarks.lib.voices import SMALL_VOICE, VOICE_NAME, fullsize_root, server_args, small_root
from benchmarks.lib.wyoming import listen

RESULT = "library-load"
MIB = 2**20
AIVMX_DIR = CACHE / "library-load"
BUILD_VERSION = 1
TEXT = "リビングの照明を消しました。エアコンは二十五度の冷房で動いています。"
INSTALLED = "guest"
"""The name the `.aivmx` is installed under."""
_LOG = logging.getLogger("library-load")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cycles", type=int, default=5, help="installs and removes (default 5)")
    p.add_argument(
        "--baseline",
        type=int,
        default=20,
        help="requests without installs before the cycles, and again after (default 20)",
    )
    p.add_argument("--busy", action="store_true", help="keep one other core busy meanwhile")


# -- the .aivmx --------------------------------------------------------------------------
def build_aivmx(small: bool) -> Path:
    """The `.aivmx` to install (built once, cached): the full-size JP-Extra network with
    random weights (BERT 1024 wide, the full-size BERT's), or with `small` the tests' small
    network (BERT 64 wide, the small root's)."""
    out = AIVMX_DIR / ("small.aivmx" if small else "fullsize.aivmx")
    marker = out.with_suffix(".json")
    try:
        if json.loads(marker.read_text())["version"] == BUILD_VERSION and out.is_file():
            return out
    except (OSError, ValueError, KeyError):
        pass
    import numpy as np
    import torch

    from engine.model import JPExtraSynthesizer
    from engine.voice_config import parse_config
    from tests.helpers.aivm import Speaker, Spec, export_aivis_onnx, small_model, write_aivmx

    AIVMX_DIR.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if small:
        model, raw, vectors = small_model(n_speakers=1, bert_channels=64, seed=3)
    else:
        from benchmarks.lib.fullsize import voice_config

        torch.manual_seed(4321)
        raw = voice_config()
        raw["data"]["spk2id"] = {"guest": 0}
        model = JPExtraSynthesizer(parse_config(raw)).eval()
        _real_rate(model)
        vectors = np.random.default_rng(4321).standard_normal((1, 256)).astype(np.float32) * 0.1
    graph = AIVMX_DIR / (out.stem + ".onnx")
    export_aivis_onnx(model, graph)
    spec = Spec("Library Guest", [Speaker("guest", 0, {"Neutral": 0})])
    write_aivmx(graph, out.with_suffix(".partial"), raw, vectors, spec)
    graph.unlink()
    out.with_suffix(".partial").replace(out)
    marker.write_text(json.dumps({"version": BUILD_VERSION}))
    _LOG.info("%s built in %.0f s", out, time.perf_counter() - t0)
    return out


def _real_rate(model: Any) -> None:
    """About three frames per phone id, as a real voice speaks (both duration predictors)."""
    import numpy as np
    import torch

    with torch.no_grad():
        model.dp.proj.weight.mul_(0.01)
        model.dp.proj.bias.fill_(0.9)
        model.sdp.flows[0].logs[0].fill_(3.0)
        model.sdp.flows[0].m[0].fill_(-0.9 * float(np.exp(3.0)))


# -- the load ------------------------------------------------------------------------------
class Load:
    """One-shot Wyoming requests on the served voice, back to back, until `stop`; each
    tagged with the phase it started in. `pause` waits for the request in flight."""

    def __init__(self, server: Server, voice: str) -> None:
        self.server, self.voice = server, voice
        self.phase = "baseline"
        self.first_audio: dict[str, list[float]] = {}
        self.failures: list[str] = []
        self._running = asyncio.Event()
        self._running.set()
        self._idle = asyncio.Event()
        self._stopped = False

    def count(self, phase: str) -> int:
        return len(self.first_audio.get(phase, []))

    async def run(self) -> None:
        while not self._stopped:
            await self._running.wait()
            if self._stopped:
                break
            self._idle.clear()
            phase = self.phase
            try:
                heard = await listen(
                    "127.0.0.1", self.server.port, TEXT, self.voice, streamed=False, timeout=120
                )
                if heard.clock.audio_s < 0.5:
                    raise RuntimeError(f"{heard.clock.audio_s:.2f} s of audio")
                self.first_audio.setdefault(phase, []).append(heard.first_audio_s)
            except Exception as exc:  # noqa: BLE001 - a failed request is what is counted
                self.failures.append(f"{phase}: {exc!r}")
                log(f"request failed ({phase}): {exc!r}")
                if self.server.proc.poll() is not None:
                    self._stopped = True  # the server is gone: no more requests to count
            finally:
                self._idle.set()

    async def until(self, phase: str, n: int) -> None:
        while self.count(phase) < n:
            if self._stopped:
                raise RuntimeError(f"the server exited:\n{self.server.log()}")
            await asyncio.sleep(0.05)

    async def pause(self) -> None:
        self._running.clear()
        await self._idle.wait()

    def resume(self) -> None:
        self._running.set()

    async def stop(self) -> None:
        self._stopped = True
        self._running.set()
        await self._idle.wait()


class PageApi:
    """The server's page API (the library's endpoints), as the page calls it."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.headers = {"Origin": self.base}

    async def call(self, method: str, path: str, data: Any = None) -> tuple[int, Any]:
        import aiohttp

        async with (
            aiohttp.ClientSession() as s,
            s.request(method, self.base + path, json=data, headers=self.headers) as r,
        ):
            return r.status, await r.json()

    async def install(self, source: str, name: str, timeout: float = 1800) -> dict[str, Any]:
        status, answer = await self.call(
            "POST", "/api/library/install", {"source": source, "name": name}
        )
        if status != 202:
            raise RuntimeError(f"install refused ({status}): {answer}")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            _, job = await self.call("GET", f"/api/library/jobs/{answer['job']}")
            if job["state"] in ("ready", "failed", "cancelled"):
                return dict(job)
            await asyncio.sleep(0.1)
        raise TimeoutError(f"install not done after {timeout:.0f} s")

    async def remove(self, name: str) -> None:
        status, answer = await self.call("POST", "/api/library/remove", {"name": name})
        if status != 200:
            raise RuntimeError(f"remove refused ({status}): {answer}")


def _p90(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


QUIET_S = 2.5
"""Seconds without requests before RSS is read (the server's idle heap trim runs after 1 s)."""


async def _quiet_rss(server: Server, load: Load) -> int:
    await load.pause()
    await asyncio.sleep(QUIET_S)
    rss = server.usage()[0]
    load.resume()
    return rss


async def measure(
    flags: list[str], voice: str, aivmx: Path, cycles: int, baseline: int
) -> dict[str, Any]:
    """The run (see the module text): first audio by phase, failures, each cycle's times and
    RSS."""
    from tests.helpers.aivishub import HubModel, StandInHub
    from tests.helpers.net import free_port

    hub = await StandInHub().start()
    model = hub.add(HubModel(aivmx))
    http = free_port()
    out: dict[str, Any] = {"cycles": []}
    with tempfile.TemporaryDirectory(prefix="library-load-") as tmp:
        args = [
            *flags,
            "--precision",
            "fp32",
            "--cache-dir",
            f"{tmp}/cache",
            "--library-dir",
            f"{tmp}/library",
            "--http",
            f"127.0.0.1:{http}",
            "--aivishub-api",
            hub.api,
        ]
        try:
            with Server(args, label=f"library-load-{os.getpid()}") as server:
                out["ready_s"] = await server.wait_ready()
                page = PageApi(http)
                load = Load(server, voice)
                runner = asyncio.create_task(load.run())
                await load.until("baseline", baseline)
                out["rss_before"] = await _quiet_rss(server, load)
                log(
                    f"baseline: {load.count('baseline')} requests, "
                    f"RSS {out['rss_before'] / MIB:,.0f} MiB"
                )
                load.phase = "installs"
                for n in range(cycles):
                    t0 = time.monotonic()
                    job = await page.install(model.uuid, INSTALLED)
                    installed_s = time.monotonic() - t0
                    if job["state"] != "ready":
                        raise RuntimeError(f"install {n + 1} ended {job['state']}: {job['error']}")
                    spoken = await listen(
                        "127.0.0.1", server.port, "はい、どうぞ。", INSTALLED, streamed=False
                    )
                    t0 = time.monotonic()
                    await page.remove(INSTALLED)
                    removed_s = time.monotonic() - t0
                    load.phase = "after"  # the quiet RSS reading is not part of the cycles
                    rss = await _quiet_rss(server, load)
                    load.phase = "installs"
                    out["cycles"].append(
                        {
                            "install_s": installed_s,
                            "remove_s": removed_s,
                            "rss_after_remove": rss,
                            "guest_audio_s": spoken.clock.audio_s,
                        }
                    )
                    log(
                        f"cycle {n + 1}: install {installed_s:.1f} s, remove {removed_s:.1f} s, "
                        f"RSS {rss / MIB:,.0f} MiB"
                    )
                load.phase = "baseline"
                await load.until("baseline", 2 * baseline)
                await load.stop()
                await runner
                out["first_audio"] = load.first_audio
                out["failures"] = load.failures
                out["log_tail"] = server.log()[-1500:]
        finally:
            await hub.stop()
    return out


def run(args: argparse.Namespace) -> Report:
    quick = bool(args.quick)
    cycles = 1 if quick else args.cycles
    baseline = 2 if quick else args.baseline
    if quick:
        flags, voice = server_args(small_root(), SMALL_VOICE), SMALL_VOICE
    else:
        flags, voice = server_args(fullsize_root()), VOICE_NAME
    aivmx = build_aivmx(small=quick)
    if args.busy and not quick and args.out is None:
        args.out = RESULTS / f"{RESULT}-busy"
    load_label = "one other core busy" if args.busy else "idle"
    report = Report(
        f"Library installs under load: {cycles} install/remove cycles of "
        f"{'a small' if quick else 'a full-size'} .aivmx ({aivmx.stat().st_size / MIB:.0f} MiB), "
        f"{load_label}"
    )
    with busy_core(args.busy):
        out = asyncio.run(measure(flags, voice, aivmx, cycles, baseline))
    fa = out["first_audio"]
    base = fa.get("baseline", [])
    during = fa.get("installs", [])
    b_med, b_p90 = median(base), _p90(base)
    rows = []
    for label, values in (("without installs", base), ("during installs and removes", during)):
        med, p90 = median(values), _p90(values)
        rows.append(
            [
                label,
                len(values),
                f"{med:.3f}",
                f"{p90:.3f}",
                f"{med / b_med:.2f}×",
                f"{p90 / b_p90:.2f}×",
            ]
        )
    failed = len(out["failures"])
    report.table(
        [
            "requests on the served voice",
            "n",
            "first audio median (s)",
            "p90 (s)",
            "median × without",
            "p90 × without",
        ],
        rows,
        align="lrrrrr",
    )
    before = out["rss_before"]
    report.table(
        ["cycle", "install (s)", "remove (s)", "RSS after remove (MiB)", "× before first install"],
        [
            [
                i + 1,
                f"{c['install_s']:.1f}",
                f"{c['remove_s']:.2f}",
                f"{c['rss_after_remove'] / MIB:,.0f}",
                f"{c['rss_after_remove'] / before:.3f}×",
            ]
            for i, c in enumerate(out["cycles"])
        ],
        align="rrrrr",
    )
    worst_rss = max((c["rss_after_remove"] for c in out["cycles"]), default=before) / before
    report.note(
        f"Failed requests: **{failed}** (target 0). First audio during installs / without: "
        f"median **{median(during) / b_med:.2f}×**, p90 **{_p90(during) / b_p90:.2f}×** "
        f"(target ≤ 1.5×). RSS before the first install {before / MIB:,.0f} MiB; after a "
        f"remove at most **{worst_rss:.3f}×** (target ≤ 1.10×). Server ready in "
        f"{out['ready_s']:.0f} s; `--precision fp32` (no int8 made in the background); the "
        "voices are random weights of the real architecture (shapes decide the cost)."
    )
    if out["failures"]:
        report.note("Failures: " + "; ".join(out["failures"][:5]))
    report.data.update(
        failed=failed,
        first_audio=fa,
        ratio_median=median(during) / b_med,
        ratio_p90=_p90(during) / b_p90,
        rss_before=before,
        rss_worst_ratio=worst_rss,
        cycles=out["cycles"],
        busy=bool(args.busy),
        aivmx_bytes=aivmx.stat().st_size,
    )
    return report


if __name__ == "__main__":
    import sys

    logging.basicConfig(level=logging.INFO)
    print(build_aivmx(small="--small" in sys.argv))
