"""Password hashing with argon2id (argon2-cffi's RFC 9106 defaults) and the password policy.

Hashing and verification cost tens of milliseconds of CPU on purpose: callers in an event loop
run them in a thread (`hash_password_async`, `verify_password_async`). Unknown accounts are
verified against a dummy hash so that a login takes as long whether or not the email exists.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from valuerank.errors import InvalidInputError

MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 1024

_hasher = PasswordHasher()


def check_password_policy(password: str) -> None:
    """INVALID_INPUT unless the password is long enough (and not absurdly long)."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInputError(
            f"the password is shorter than {MIN_PASSWORD_LENGTH} characters",
            hint="use a passphrase of several words, or a password manager's random password",
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        raise InvalidInputError(f"the password is longer than {MAX_PASSWORD_LENGTH} characters")
    if not password.strip():
        raise InvalidInputError("the password is only whitespace")


def hash_password(password: str) -> str:
    """The argon2id hash (PHC string, salt included) of a password that passes the policy."""
    check_password_policy(password)
    return _hasher.hash(password)


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _hasher.hash("not-a-password-of-anyone")


def verify_password(stored_hash: str | None, password: str) -> bool:
    """Whether `password` matches `stored_hash`; with no hash, spends the same time and fails."""
    if len(password) > MAX_PASSWORD_LENGTH:
        return False
    try:
        return _hasher.verify(stored_hash or _dummy_hash(), password) and stored_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored_hash: str) -> bool:
    """True when the hash was made with weaker parameters than today's."""
    try:
        return _hasher.check_needs_rehash(stored_hash)
    except InvalidHashError:
        return True


async def hash_password_async(password: str) -> str:
    check_password_policy(password)  # in the caller's task: a clear error, no thread
    return await asyncio.to_thread(hash_password, password)


async def verify_password_async(stored_hash: str | None, password: str) -> bool:
    return await asyncio.to_thread(verify_password, stored_hash, password)
