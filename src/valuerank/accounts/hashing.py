"""Random secrets (API tokens, session ids, CSRF tokens) and how they are stored.

A secret has 256 random bits, so a plain SHA-256 of it is enough to store: nothing can be
guessed from the digest (argon2's cost is for low-entropy passwords). Lookups go by digest
through a unique index; no secret is ever stored or compared in clear.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

TOKEN_PREFIX = "vrt_"  # recognisable in logs, configs and secret scanners
SECRET_BYTES = 32
# token_urlsafe(32) is 43 characters; anything shorter was not made here.
_TOKEN_PATTERN = re.compile(r"vrt_[A-Za-z0-9_-]{43,128}")
DISPLAY_PREFIX_LENGTH = len(TOKEN_PREFIX) + 8


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def new_api_token() -> str:
    return TOKEN_PREFIX + new_secret()


def is_api_token(candidate: str) -> bool:
    """Whether `candidate` has the shape of one of our API tokens (no database needed)."""
    return _TOKEN_PATTERN.fullmatch(candidate) is not None


def digest(secret: str) -> str:
    """The SHA-256 (hex) under which a secret is stored and looked up."""
    return hashlib.sha256(secret.encode()).hexdigest()


def display_prefix(token: str) -> str:
    """The first characters of a token, shown so people can tell their tokens apart."""
    return token[:DISPLAY_PREFIX_LENGTH]


def same_secret(given: str | None, expected: str | None) -> bool:
    """Constant-time equality of two secrets; False when either is missing."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())
