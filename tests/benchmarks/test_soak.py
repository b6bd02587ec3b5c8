"""The soak benchmark, short: 200 mixed requests against the real server program (embedded
voice and the small neural voice); after warm-up RSS stays within ±5 % and open fds and
threads do not grow. `python -m benchmarks.server soak` runs the 1000-request version; this
is the server suite's test of the harness."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.server import soak

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_two_hundred_mixed_requests_leave_memory_fds_and_threads_flat() -> None:
    config = soak.SoakConfig(requests=200, sample_every=50, warmup=100, concurrency=4)
    result = asyncio.run(soak.soak(config, progress=lambda line: None))
    print(result.table())
    print(result.summary())
    assert set(result.counts) == {"one-shot", "stream", "abandon-stream", "abandon-one-shot"}
    assert sum(result.counts.values()) == 200
    assert [s.requests for s in result.samples] == [50, 100, 150, 200]
    assert result.problems() == []
