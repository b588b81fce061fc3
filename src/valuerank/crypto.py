"""Encryption at rest of stored secrets: Fernet (AES-128-CBC + HMAC-SHA256, authenticated).

One cipher for every secret ValueRank stores (provider API keys, webhook signing secrets):
it sits at the bottom of the package (it imports only `cryptography`, `pydantic` and
`valuerank.errors`), so any layer may use it. The secret comes from `VALUERANK_SECRET_KEY`
and may be either

* a Fernet key (44 characters of url-safe base64, as printed by `valuerank credentials keygen`),
  used as is — the recommended form; or
* any passphrase of at least 16 characters, stretched into a Fernet key with
  PBKDF2-HMAC-SHA256 (600,000 iterations) and a fixed, public salt. The salt is fixed on
  purpose: the key must be reproducible from the configuration alone on every host that
  shares the database, so there is nowhere to keep a random one. That makes a passphrase only
  as strong as its own entropy; prefer a generated key.

Changing the secret makes every stored secret unreadable (`SecretUnreadable`; the credential
store reports its own code, `CREDENTIAL_UNREADABLE`). Nothing here ever puts a secret in a
repr, a log line or an exception message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr

from valuerank.errors import ValueRankError

SECRET_KEY_ENV = "VALUERANK_SECRET_KEY"
KEYGEN_COMMAND = "valuerank credentials keygen"
MIN_PASSPHRASE_LENGTH = 16
# Public and fixed (see the module docstring); versioned so a future scheme can differ.
# It names credentials because they came first: changing it would make every stored secret
# derived from a passphrase unreadable.
PASSPHRASE_SALT = b"valuerank/credentials/fernet/v1"
PASSPHRASE_ITERATIONS = 600_000
# 32 bytes in url-safe base64: 43 characters and one "=" of padding.
_FERNET_KEY = re.compile(r"[A-Za-z0-9_-]{43}=")

SET_KEY_HINT = (
    f"set {SECRET_KEY_ENV} to a key from `{KEYGEN_COMMAND}` "
    f"(e.g. export {SECRET_KEY_ENV}=$({KEYGEN_COMMAND}))"
)


class SecretKeyMissing(ValueRankError):
    """A stored secret must be written or read, but no secret key is configured."""

    code = "SECRET_KEY_MISSING"
    http_status = 503


class SecretKeyInvalid(ValueRankError):
    """The configured secret key is neither a Fernet key nor a long enough passphrase."""

    code = "SECRET_KEY_INVALID"
    http_status = 503


class SecretUnreadable(ValueRankError):
    """A stored secret does not decrypt: the secret key changed (or the value was altered)."""

    code = "SECRET_UNREADABLE"
    http_status = 503


def generate_key() -> str:
    """A fresh random Fernet key (url-safe base64 text), for `VALUERANK_SECRET_KEY`."""
    return Fernet.generate_key().decode("ascii")


def is_fernet_key(secret: str) -> bool:
    """True when `secret` is url-safe base64 of exactly 32 bytes (a Fernet key)."""
    if not _FERNET_KEY.fullmatch(secret):
        return False
    try:
        return len(base64.urlsafe_b64decode(secret)) == 32
    except (binascii.Error, ValueError):
        return False


@lru_cache(maxsize=8)
def _derive(passphrase: str) -> bytes:
    raw = hashlib.pbkdf2_hmac(
        "sha256", passphrase.encode("utf-8"), PASSPHRASE_SALT, PASSPHRASE_ITERATIONS, dklen=32
    )
    return base64.urlsafe_b64encode(raw)


def fernet_key_for(secret: str) -> bytes:
    """The Fernet key of a secret: itself when it is one, else derived from the passphrase."""
    secret = secret.strip()
    if is_fernet_key(secret):
        return secret.encode("ascii")
    if len(secret) < MIN_PASSPHRASE_LENGTH:
        raise SecretKeyInvalid(
            f"{SECRET_KEY_ENV} is neither a Fernet key nor a passphrase of at least "
            f"{MIN_PASSPHRASE_LENGTH} characters",
            hint=SET_KEY_HINT,
        )
    return _derive(secret)


class SecretCipher:
    """Encrypts and decrypts stored secrets with one key. Its repr never shows the key."""

    __slots__ = ("_fernet",)

    def __init__(self, secret: str | SecretStr) -> None:
        value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
        if not value.strip():
            raise SecretKeyMissing(f"{SECRET_KEY_ENV} is empty", hint=SET_KEY_HINT)
        self._fernet = Fernet(fernet_key_for(value))

    def __repr__(self) -> str:
        return "SecretCipher(secret=<hidden>)"

    def encrypt(self, plaintext: str) -> str:
        """The Fernet token of `plaintext` (ASCII text; a new random IV every time)."""
        return self._fernet.encrypt(plaintext.encode("utf-8")).decode("ascii")

    def decrypt(
        self, token: str, *, what: str = "a stored secret", remedy: str | None = None
    ) -> str:
        """The plaintext of `token`; `SecretUnreadable` when this key cannot open it.

        `what` names the secret in the error ("the stored API key for openai"); `remedy`,
        when given, is the other way out besides restoring the previous key
        ("store the key again with …").
        """
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError, ValueError):
            hint = f"restore the previous {SECRET_KEY_ENV}"
            # `from None`: nothing of the token or the key travels with the error.
            raise SecretUnreadable(
                f"{what} cannot be decrypted: {SECRET_KEY_ENV} has changed since it was stored "
                "(or the stored value was altered)",
                hint=hint if remedy is None else f"{hint}, or {remedy}",
            ) from None


def cipher_from_secret(
    secret: str | SecretStr | None, *, purpose: str, note: str | None = None
) -> SecretCipher:
    """A cipher for `secret`, or `SecretKeyMissing` saying how to set one when there is none.

    `purpose` completes "… needs VALUERANK_SECRET_KEY" in the error (e.g. "storing a key");
    `note`, when given, is added in parentheses (what still works without a key).
    """
    if secret is None:
        extra = "" if note is None else f" ({note})"
        raise SecretKeyMissing(
            f"{purpose} needs {SECRET_KEY_ENV}, which is not set{extra}", hint=SET_KEY_HINT
        )
    return SecretCipher(secret)


def optional_cipher(secret: str | SecretStr | None) -> SecretCipher | None:
    """A cipher when a secret key is configured, else None (for processes such as workers
    that only need one when they meet a stored secret). An invalid key still raises."""
    return None if secret is None else SecretCipher(secret)
