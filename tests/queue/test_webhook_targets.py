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
