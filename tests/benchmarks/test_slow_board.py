"""The playback guard on a board slower than speech: the real program with the small voice
in a CPU-quota cgroup (tests/helpers/cgroup.py) so tight it runs at less than half real time,
listened to by the benchmarks' real-time listener (`benchmarks.lib.wyoming.listen`).
Guard off: the listener hears gaps; guard on (`auto`): none. `python -m benchmarks.server
slow-board` is the full-size version with figures. Skipped where no CPU-quota cgroup can be
made (not root, no cpu controller).

Two servers, guard off and guard auto, each in its own cgroup with the same quota, are asked
the same thing at the same time (their quotas keep them from slowing each other down)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import pytest

from benchmarks.lib import wyoming as client
from benchmarks.server import slow_board
from tests.helpers.cgroup import CpuQuota, quota_unavailable
from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.helpers.voices import LAYOUT_VOICE

_NO_QUOTA = quota_unavailable()
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(_NO_QUOTA is not None, reason=f"no CPU-quota cgroup: {_NO_QUOTA}"),
]

RTF = 2.5
"""How much slower than real time the quota makes the voice (aimed at: the machine's other
work makes it vary)."""
# A short sentence, then a longer one: as a language model's answers often start.
TEXT = "はい、わかりました。明日の朝は七時にアラームを鳴らして、天気もお知らせしますね。"
WARM_UP = "おはようございます。"
GUARDS = ("off", "auto")
MODES = ("streamed", "one-shot")


async def _listen_to_both(root: Path, caches: Path) -> dict[str, Any]:
    ports = {guard: free_port() for guard in GUARDS}
    heard: dict[str, dict[str, Any]] = {guard: {} for guard in GUARDS}
    async with AsyncExitStack() as stack:
        servers = {}
        for guard, port in ports.items():
            args = ("--uri", f"tcp://127.0.0.1:{port}", "--voice", f"{LAYOUT_VOICE}={root}")
            args += ("--bert-source", str(root), "--threads", "1", "--playback-guard", guard)
            # a cache each: two processes starting at once must not share derived files
            args += ("--cache-dir", str(caches / guard))
            servers[guard] = await stack.enter_async_context(Program(*args))
        await asyncio.gather(*(s.wait_ready() for s in servers.values()))
        # CPU time per second of audio, unthrottled: the quota follows from it whatever else
        # the machine is doing (CPU time, not wall time). Measured on a second request: the
        # first one pays for things done once.
        pid = servers["off"].proc.pid
        await slow_board.cpu_per_audio(ports["off"], pid, (WARM_UP,), LAYOUT_VOICE)
        need = await slow_board.cpu_per_audio(ports["off"], pid, (TEXT,), LAYOUT_VOICE)
        cpus = need / RTF

        # The kernel's smallest quota is 1 ms per period, so at this small share (~1 % of a
        # CPU) the period is long (~70-100 ms) and the server runs in bursts; and as the
        # kernel charges CPU time at its tick, a burst can overrun the 1 ms and is repaid
        # from the next periods (`CpuQuota.longest_stall_us`: 1 + tick/quota periods, ~0.5 s
        # at a 4 ms tick; 0.31-0.42 s stalls were seen right after the guard released, while
        # the server was only writing audio already made). Waits up to that long are the
        # emulation's, not something the guard could know of (a real slow board runs
        # steadily; the benchmark's full-size voice gets 10 ms periods). Longer ones are
        # gaps; without the guard they last 1-5 s here.
        min_gap = 0.0

        async def both(text: str, mode: str) -> list[Any]:
            return await asyncio.gather(
                *(
                    client.listen(
                        "127.0.0.1",
                        ports[guard],
                        text,
                        LAYOUT_VOICE,
                        streamed=mode == "streamed",
                        pace=client.Pace(),
                        min_gap=min_gap,
                    )
                    for guard in GUARDS
                )
            )

        with ExitStack() as cgroups:
            quotas = {g: cgroups.enter_context(CpuQuota(f"test-{g}", cpus)) for g in GUARDS}
            for guard, quota in quotas.items():
                quota.add(servers[guard].proc.pid)
            min_gap = max(client.MIN_GAP_S, quotas["auto"].longest_stall_us() / 1e6)
            await both(WARM_UP, "one-shot")  # the guard learns the board's speed
            for mode in MODES:
                for guard, h in zip(GUARDS, await both(TEXT, mode)):
                    heard[guard][mode] = h
            throttled = {g: q.throttled() for g, q in quotas.items()}
        for server in servers.values():
            assert await server.stop() == 0, server.log
    return {"heard": heard, "throttled": throttled, "cpus": cpus, "min_gap": min_gap}


@pytest.fixture(scope="module")
def board(layout_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both servers' answers to one streamed and one one-shot request on the slow board."""
    return asyncio.run(_listen_to_both(layout_root, tmp_path_factory.mktemp("caches")))


def _figures(board: dict[str, Any]) -> dict[str, Any]:
    heard = board["heard"]
    gaps = {
        g: {m: [(x.at_s, x.seconds) for x in h.clock.gaps] for m, h in per.items()}
        for g, per in heard.items()
    }
    return {"min_gap": board["min_gap"], "gaps": gaps}


@pytest.mark.parametrize("mode", MODES)
def test_without_the_guard_a_slow_board_falls_silent_mid_answer(board, mode: str) -> None:
    off = board["heard"]["off"][mode]
    assert all(board["throttled"].values()), board["throttled"]  # the quota held them back
    assert off.total_s > off.clock.audio_s, _figures(board)  # slower than real time indeed
    assert off.clock.gap_count >= 1, _figures(board)


def test_with_the_guard_a_one_shot_answer_plays_without_gaps(board) -> None:
    off, on = board["heard"]["off"]["one-shot"], board["heard"]["auto"]["one-shot"]
    assert on.clock.gap_count == 0, _figures(board)
    assert on.first_audio_s > off.first_audio_s, _figures(board)  # the price: one wait first


def test_with_the_guard_a_streamed_answer_plays_without_gaps(board) -> None:
    off, on = board["heard"]["off"]["streamed"], board["heard"]["auto"]["streamed"]
    assert on.clock.gap_count == 0, _figures(board)
    assert on.first_audio_s > off.first_audio_s, _figures(board)
