"""Advertise the server as ``_wyoming._tcp.local.`` so Home Assistant discovers it.

Uses the `zeroconf` package directly (the wyoming library's helper advertises whatever host
it is given — ``0.0.0.0`` for a server bound to all interfaces — and never withdraws the
service). The advertised address is a real one: the bound address, or for a wildcard bind
the address of the interface that holds the default route. The service is withdrawn
(goodbye packets) on shutdown.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Sequence
from typing import Any

from zeroconf import IPVersion, ServiceInfo
from zeroconf.asyncio import AsyncZeroconf

__all__ = ["SERVICE_TYPE", "ZeroconfAdvertiser", "advertised_address", "default_route_address"]

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
_WILDCARDS = {"", "0.0.0.0", "::", "*"}


def default_route_address() -> str | None:
    """The local IPv4 address used to reach the outside (no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.123", 9))  # TEST-NET-1: only the routing decision matters
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address in _WILDCARDS else address


def advertised_address(host: str) -> str:
    """The address to advertise for a server bound to `host` (never a wildcard)."""
    if host not in _WILDCARDS:
        try:
            ipaddress.ip_address(host)
            return host
        except ValueError:  # a host name
            try:
                return socket.gethostbyname(host)
            except OSError:
                pass
    found = default_route_address()
    if found:
        return found
    try:
        resolved = socket.gethostbyname(socket.gethostname())
        if not resolved.startswith("127."):
            return resolved
    except OSError:
        pass
    _LOGGER.warning("No network address found for zeroconf; advertising 127.0.0.1")
    return "127.0.0.1"


class ZeroconfAdvertiser:
    """Registers one service on start, withdraws it on stop."""

    def __init__(
        self,
        name: str,
        port: int,
        host: str,
        *,
        interfaces: Sequence[str] = (),
        properties: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.port = port
        self.address = advertised_address(host)
        self.interfaces = list(interfaces)
        self.properties = properties or {}
        self._zc: AsyncZeroconf | None = None
        self._info: ServiceInfo | None = None

    @property
    def service_name(self) -> str | None:
        """The registered name (zeroconf may add a suffix on conflict)."""
        return self._info.name if self._info is not None else None

    async def start(self) -> None:
        ip = ipaddress.ip_address(self.address)
        version = IPVersion.V6Only if ip.version == 6 else IPVersion.V4Only
        kwargs: dict[str, Any] = {"ip_version": version}
        if self.interfaces:
            kwargs["interfaces"] = self.interfaces
        self._zc = AsyncZeroconf(**kwargs)
        info = ServiceInfo(
            SERVICE_TYPE,
            f"{self.name}.{SERVICE_TYPE}",
            addresses=[ip.packed],
            port=self.port,
            properties=self.properties,
            server=f"{self.name}.local.",
        )
        broadcast = await self._zc.async_register_service(info, allow_name_change=True)
        await broadcast
        self._info = info
        _LOGGER.info("Zeroconf: advertising %s at %s:%s", info.name, self.address, self.port)

    async def stop(self) -> None:
        zc, info = self._zc, self._info
        self._zc = self._info = None
        if zc is None:
            return
        try:
            if info is not None:
                goodbye = await zc.async_unregister_service(info)
                await goodbye
                _LOGGER.info("Zeroconf: withdrew %s", info.name)
        finally:
            await zc.async_close()
