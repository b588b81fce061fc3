"""Secrets, their digests and the password policy: pure functions."""

from __future__ import annotations

import pytest

from valuerank.accounts.hashing import (
    TOKEN_PREFIX,
    digest,
    display_prefix,
    is_api_token,
    new_api_token,
    same_secret,
)
from valuerank.accounts.passwords import (
    MIN_PASSWORD_LENGTH,
    check_password_policy,
    hash_password,
    needs_rehash,
    verify_password,
)
from valuerank.accounts.roles import Role
from valuerank.errors import InvalidInputError


def test_api_tokens_are_random_prefixed_and_recognised() -> None:
    tokens = {new_api_token() for _ in range(50)}
    assert len(tokens) == 50
    for token in tokens:
        assert token.startswith(TOKEN_PREFIX) and is_api_token(token)
        assert len(token) == len(TOKEN_PREFIX) + 43  # 256 random bits
        assert display_prefix(token) == token[:12] and len(digest(token)) == 64
    assert not is_api_token("vrt_short")
    assert not is_api_token("xyz_" + "a" * 43)
    assert not is_api_token(TOKEN_PREFIX + "a" * 42 + "!")
    assert digest("a") != digest("b") and digest("a") == digest("a")


def test_same_secret_is_strict() -> None:
    assert same_secret("abc", "abc")
    assert not same_secret("abc", "abd") and not same_secret("ab", "abc")
    assert not same_secret(None, "abc") and not same_secret("", "") and not same_secret("a", None)


def test_password_policy_and_argon2id() -> None:
    with pytest.raises(InvalidInputError, match="shorter than 12"):
        check_password_policy("x" * (MIN_PASSWORD_LENGTH - 1))
    with pytest.raises(InvalidInputError, match="whitespace"):
        check_password_policy(" " * 20)
    with pytest.raises(InvalidInputError, match="longer"):
        check_password_policy("x" * 1025)
    stored = hash_password("correct horse battery")
    assert stored.startswith("$argon2id$") and "correct" not in stored
    assert hash_password("correct horse battery") != stored  # salted
    assert verify_password(stored, "correct horse battery")
    assert not verify_password(stored, "correct horse batterY")
    assert not verify_password(None, "correct horse battery")
    assert not verify_password("not a hash", "correct horse battery")
    assert not needs_rehash(stored)
    assert needs_rehash("$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA")


def test_roles_are_ordered() -> None:
    assert Role.ADMIN.allows(Role.MEMBER) and Role.MEMBER.allows(Role.VIEWER)
    assert not Role.VIEWER.allows(Role.MEMBER) and not Role.MEMBER.allows(Role.ADMIN)
