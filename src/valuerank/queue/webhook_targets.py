"""Where a webhook registered over HTTP may point: public addresses only, unless the install
allows private ones (`VALUERANK_WEBHOOK_PRIVATE_TARGETS=true`).

The workers POST every notification to the webhook's URL from inside the install's network,
so a URL on loopback, a private network, link-local (cloud metadata at 169.254.169.254) or
another reserved range would let an organisation's admin make the install call its own
internal services. The check resolves the host name when the webhook is registered and
refuses it if any address it resolves to is not global. Such a webhook is marked
`public_only`, and each of its deliveries resolves the name again, checks every address the
same way and connects to the address it checked (`PublicOnlyOpener`): a name that resolves
elsewhere later (DNS rebinding) fails the delivery instead of reaching the inside. Those
deliveries do not go through an HTTP proxy from the environment (the proxy would resolve the
name itself). The CLI, run by the install's operators, registers any http(s) URL.
"""

from __future__ import annotations

import asyncio
import http.client
import ipaddress
import socket
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from valuerank.errors import InvalidInputError

RESOLVE_TIMEOUT_SECONDS = 3.0


class WebhookTargetError(InvalidInputError):
    code = "WEBHOOK_TARGET_NOT_ALLOWED"


def _refused(url: str, why: str) -> WebhookTargetError:
    return WebhookTargetError(
        f"webhook url {url!r} {why}",
        hint="use a public http(s) address; an install that delivers to its own network sets "
        "VALUERANK_WEBHOOK_PRIVATE_TARGETS=true",
    )


_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: never global
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries and would reach (mapped, NAT64, 6to4,
    Teredo, IPv4-compatible): Python calls most of these forms global whatever they carry."""
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    found = [a for a in (address.ipv4_mapped, address.sixtofour) if a is not None]
    if address.teredo is not None:
        found += list(address.teredo)
    if address in _NAT64_WELL_KNOWN or address in _IPV4_COMPATIBLE:
        found.append(low32)
    return found


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            return False
        return all(_is_public(inner) for inner in _embedded_ipv4(address))
    return True


def non_global(addresses: list[str]) -> list[str]:
    """The addresses that are not on the public internet (loopback, private, link-local,
    multicast, reserved, unspecified), an IPv6 address that embeds an IPv4 one (mapped,
    NAT64, 6to4, Teredo, IPv4-compatible) judged by what it embeds too."""
    found: list[str] = []
    for text in addresses:
        address = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if not _is_public(address):
            found.append(text)
    return found


def _unresolvable(where: str, host: str) -> WebhookTargetError:
    return _refused(where, f"has a host name that does not resolve ({host!r})")


def _first_public(where: str, infos: list[Any]) -> str:
    """The first address of a `getaddrinfo` answer, when every address in it is global."""
    private = non_global(sorted({str(info[4][0]) for info in infos}))
    if private:
        raise _refused(where, f"resolves to an address that is not public ({', '.join(private)})")
    return str(infos[0][4][0])


async def check_public_target(url: str) -> None:
    """Refuse (WEBHOOK_TARGET_NOT_ALLOWED) a URL whose host does not resolve, or resolves
    to any address that is not global."""
    parts = urlsplit(url)
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        raise InvalidInputError(f"invalid webhook url {url!r}", hint="use an http(s):// URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise InvalidInputError(f"invalid port in webhook url {url!r}") from None
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM),
            timeout=RESOLVE_TIMEOUT_SECONDS,
        )
    except (OSError, TimeoutError, UnicodeError):
        raise _unresolvable(url, host) from None
    _first_public(url, infos)


def public_address(host: str, port: int) -> tuple[str, int]:
    """The address (ip, port) of `host` to connect to, when every address it resolves to is
    global; else WEBHOOK_TARGET_NOT_ALLOWED (blocking: for the delivery threads)."""
    where = f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise _unresolvable(where, host) from None
    return _first_public(where, infos), port


def _connect_public(address: tuple[str, int], *args: Any) -> socket.socket:
    """`socket.create_connection` to the address `public_address` checked; the host name
    still names the server to HTTP and TLS (Host header, SNI, the certificate check)."""
    return socket.create_connection(public_address(*address), *args)


class _PublicHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect_public  # what connect() opens the socket with


class _PublicHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect_public


class _PublicHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_PublicHTTPConnection, req)


class _PublicHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_PublicHTTPSConnection, req)


def public_only_handlers() -> list[urllib.request.BaseHandler]:
    """urllib handlers that connect only to checked public addresses, without proxies."""
    return [urllib.request.ProxyHandler({}), _PublicHTTPHandler(), _PublicHTTPSHandler()]
