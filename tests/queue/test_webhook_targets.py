"""Which resolved addresses a webhook registered over HTTP may not reach."""

from __future__ import annotations

import pytest

from valuerank.queue.webhook_targets import (
    WebhookTargetError,
    check_public_target,
    non_global,
    public_address,
)


def test_only_global_addresses_pass() -> None:
    private = [
        "127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "0.0.0.0",
        "100.64.0.1", "224.0.0.1", "::1", "fe80::1%eth0", "fc00::1", "::ffff:10.0.0.1", "::",
    ]  # fmt: skip
    public = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34"]
    assert non_global(private) == private
    assert non_global(public) == []


async def test_literal_addresses_are_judged_without_dns() -> None:
    await check_public_target("https://93.184.216.34:8443/hook")
    with pytest.raises(WebhookTargetError, match="not public"):
        await check_public_target("http://[fe80::1]/hook")
    with pytest.raises(WebhookTargetError):
        await check_public_target("http://127.1/hook")  # inet_aton's short form: loopback


def test_a_delivery_connects_to_the_address_it_checked() -> None:
    assert public_address("93.184.216.34", 443) == ("93.184.216.34", 443)
    assert public_address("2606:4700:4700::1111", 80) == ("2606:4700:4700::1111", 80)
    for inside in ("127.0.0.1", "localhost", "169.254.169.254", "::ffff:10.0.0.1"):
        with pytest.raises(WebhookTargetError, match="not public"):
            public_address(inside, 80)
    with pytest.raises(WebhookTargetError, match="does not resolve"):
        public_address("no-such-host.invalid", 80)


# IPv6 forms that carry a private IPv4 address (the outside probe registered all of these).
EMBEDDED_PRIVATE = [
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64 prefix (never global)
    "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
    "::127.0.0.1",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo whose client is 10.0.0.1 (obfuscated)
]


@pytest.mark.parametrize("address", EMBEDDED_PRIVATE)
async def test_ipv6_forms_of_private_ipv4_are_refused(address: str) -> None:
    assert non_global([address]) == [address]
    with pytest.raises(WebhookTargetError, match="not public"):
        await check_public_target(f"http://[{address}]/hook")
    with pytest.raises(WebhookTargetError, match="not public"):
        public_address(address, 80)


def test_ipv6_forms_of_public_ipv4_pass() -> None:
    public = ["64:ff9b::5db8:d822", "2002:5db8:d822::1", "2001:db8:85a3::8a2e:370:7334"]
    # 2001:db8::/32 is documentation space: not global, so only the first two pass.
    assert non_global(public) == ["2001:db8:85a3::8a2e:370:7334"]
