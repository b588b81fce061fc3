"""Login takes the same argon2 work whether or not the email has an account (issue 21): an
unknown email, or an account without a password, is verified against a dummy hash with the
same parameters, so the answer's timing does not tell which emails exist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from argon2 import PasswordHasher

from valuerank.accounts import Role, add_member

from .conftest import Live

PASSWORD = "correct horse battery staple"


@pytest.fixture
def verifications(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The argon2 hashes verified while the test runs (the real verification still runs:
    this only records what it was asked to check)."""
    seen: list[str] = []
    real: Callable[..., Any] = PasswordHasher.verify

    def counting(self: PasswordHasher, stored: str, password: str) -> Any:
        seen.append(stored)
        return real(self, stored, password)

    monkeypatch.setattr(PasswordHasher, "verify", counting)
    return seen


async def test_unknown_email_costs_the_same_verification_as_a_wrong_password(
    live: Live, assert_error: Any, verifications: list[str]
) -> None:
    async with live.db.transaction() as conn:
        await add_member(conn, live.org_id, "ada@example.org", Role.VIEWER, password=PASSWORD)
        await add_member(conn, live.org_id, "tokens-only@example.org", Role.VIEWER)
    attempts = {
        "wrong password": "ada@example.org",
        "unknown email": "nobody@example.org",
        "no password": "tokens-only@example.org",
        "not an email": "not-an-email",
    }
    async with live.client(token=None) as browser:
        for label, email in attempts.items():
            before = len(verifications)
            answer = await browser.post(
                "/api/auth/login", json={"email": email, "password": "wrong password 123"}
            )
            error = assert_error(answer, 401, "INVALID_CREDENTIALS")
            assert error["error"] == "wrong email or password", label
            # One argon2 verification each, with the same parameters as a real hash.
            assert len(verifications) == before + 1, label
            assert verifications[-1].split("$")[:4] == verifications[0].split("$")[:4], label
        ok = await browser.post(
            "/api/auth/login", json={"email": "ada@example.org", "password": PASSWORD}
        )
        assert ok.status_code == 200, ok.text
    assert len(verifications) == len(attempts) + 1
