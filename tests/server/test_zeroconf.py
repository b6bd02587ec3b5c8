"""Zeroconf: the server is advertised with a real address and withdrawn on shutdown.

Only loopback is used: the server's zeroconf is bound to 127.0.0.1 (hidden flag
``--zeroconf-interface``) and so is the test's browser; nothing is multicast on real
interfaces.
"""

from __future__ import annotations

import ipaddress
import uuid

import pytest
from zeroconf import IPVersion, ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from tests.helpers.net import free_port
from tests.helpers.program import Program
from tests.helpers.waiting import until
from wyoming_hayakoe.zeroconf import (
    SERVICE_TYPE,
    advertised_address,
    default_route_address,
)

pytestmark = pytest.mark.timeout(120)


def test_a_wildcard_bind_advertises_a_real_address() -> None:
    for wildcard in ("0.0.0.0", "", "::"):
        address = advertised_address(wildcard)
        ip = ipaddress.ip_address(address)
        assert not ip.is_unspecified
        route = default_route_address()
        if route is not None:
            assert address == route
    assert advertised_address("127.0.0.1") == "127.0.0.1"
    assert advertised_address("192.0.2.7") == "192.0.2.7"


async def test_registration_is_seen_on_loopback_and_withdrawn_on_sigterm() -> None:
    name = f"hayakoe-test-{uuid.uuid4().hex[:8]}"
    port = free_port()
    browser_zc = AsyncZeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    changes: list[tuple[str, ServiceStateChange]] = []

    def on_change(zeroconf, service_type, name, state_change) -> None:
        changes.append((name, state_change))

    browser = AsyncServiceBrowser(browser_zc.zeroconf, SERVICE_TYPE, handlers=[on_change])
    full_name = f"{name}.{SERVICE_TYPE}"
    try:
        async with Program(
            "--uri",
            f"tcp://127.0.0.1:{port}",
            "--zeroconf",
            name,
            "--zeroconf-interface",
            "127.0.0.1",
        ) as prog:
            await prog.wait_ready()
            await until(lambda: (full_name, ServiceStateChange.Added) in changes, 15)
            info = AsyncServiceInfo(SERVICE_TYPE, full_name)
            assert await info.async_request(browser_zc.zeroconf, 3000)
            assert info.port == port
            assert info.parsed_addresses() == ["127.0.0.1"]
            assert await prog.stop() == 0
            assert "withdrew" in prog.log
        await until(lambda: (full_name, ServiceStateChange.Removed) in changes, 15)
    finally:
        await browser.async_cancel()
        await browser_zc.async_close()
