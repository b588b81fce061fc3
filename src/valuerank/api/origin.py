"""Where a request comes from: this machine (loopback client, loopback Host, no proxy in
between — what auto-login needs) or this site (a browser's Origin naming our Host — what a
WebSocket or an auto-login write needs)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import Scope

from valuerank.api.ratelimit import client_host

FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")


def is_loopback_host(host: str) -> bool:
    """An address (or `localhost`) that only this machine can reach."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _host_name(host_header: str) -> str:
    """The host of a Host header: `127.0.0.1:8000` → `127.0.0.1`, `[::1]:80` → `::1`."""
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def is_local_request(scope: Scope) -> bool:
    """From this machine, to this machine by a loopback name, not relayed by a proxy."""
    headers = Headers(scope=scope)
    if any(name in headers for name in FORWARDING_HEADERS):
        return False
    return is_loopback_host(client_host(scope)) and is_loopback_host(
        _host_name(headers.get("host", ""))
    )


def same_origin(scope: Scope) -> bool:
    """No Origin header (not a browser), or the Origin names this very Host."""
    headers = Headers(scope=scope)
    origin = headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
