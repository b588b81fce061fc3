"""The shared Fernet cipher of stored secrets: keys, passphrases, wrong keys, no leaks."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr

from valuerank.crypto import (
    SecretCipher,
    SecretKeyInvalid,
    SecretKeyMissing,
    SecretUnreadable,
    cipher_from_secret,
    fernet_key_for,
    generate_key,
    is_fernet_key,
    optional_cipher,
)

API_KEY = "sk-test-0123456789abcdefWXYZ"
PASSPHRASE = "correct horse battery staple"


def test_generated_keys_are_fernet_keys_and_differ() -> None:
    first, second = generate_key(), generate_key()
    assert first != second
    assert is_fernet_key(first) and is_fernet_key(second)
    Fernet(first.encode())  # accepted by cryptography itself


def test_round_trip_with_a_generated_key() -> None:
    cipher = SecretCipher(generate_key())
    token = cipher.encrypt(API_KEY)
    assert API_KEY not in token
    assert cipher.decrypt(token) == API_KEY


def test_a_fernet_key_is_used_as_is() -> None:
    key = generate_key()
    assert fernet_key_for(key) == key.encode()
    # Tokens written by plain Fernet with that key are readable, and vice versa.
    assert SecretCipher(key).decrypt(Fernet(key.encode()).encrypt(b"abc").decode()) == "abc"


def test_a_passphrase_derives_a_stable_key() -> None:
    derived = fernet_key_for(PASSPHRASE)
    assert is_fernet_key(derived.decode())
    assert fernet_key_for(PASSPHRASE) == derived
    assert fernet_key_for(PASSPHRASE + "!") != derived
    # Two ciphers from the same passphrase (e.g. two hosts) read each other's tokens.
    token = SecretCipher(PASSPHRASE).encrypt(API_KEY)
    assert SecretCipher(SecretStr(PASSPHRASE)).decrypt(token) == API_KEY


def test_surrounding_whitespace_of_the_secret_is_ignored() -> None:
    key = generate_key()
    token = SecretCipher(key).encrypt(API_KEY)
    assert SecretCipher(f"  {key}\n").decrypt(token) == API_KEY


@pytest.mark.parametrize("secret", ["short", "x" * 15, " padded-short  "])
def test_short_passphrases_are_refused(secret: str) -> None:
    with pytest.raises(SecretKeyInvalid) as info:
        SecretCipher(secret)
    assert info.value.code == "SECRET_KEY_INVALID"
    assert secret not in str(info.value)
    assert "valuerank credentials keygen" in (info.value.hint or "")


def test_no_secret_is_a_clear_error() -> None:
    with pytest.raises(SecretKeyMissing) as info:
        cipher_from_secret(None, purpose="storing an API key for openai")
    err = info.value
    assert err.code == "SECRET_KEY_MISSING"
    assert (
        err.message == "storing an API key for openai needs VALUERANK_SECRET_KEY, which is not set"
    )
    assert "valuerank credentials keygen" in (err.hint or "")
    with pytest.raises(SecretKeyMissing) as info:
        cipher_from_secret(None, purpose="signing webhooks", note="unsigned ones work without it")
    assert info.value.message.endswith("which is not set (unsigned ones work without it)")
    with pytest.raises(SecretKeyMissing):
        SecretCipher(SecretStr("  "))


def test_wrong_key_is_secret_unreadable_without_leaking() -> None:
    right, wrong = generate_key(), generate_key()
    token = SecretCipher(right).encrypt(API_KEY)
    with pytest.raises(SecretUnreadable) as info:
        SecretCipher(wrong).decrypt(
            token, what="the signing secret of webhook w1", remedy="register the webhook again"
        )
    err = info.value
    assert err.code == "SECRET_UNREADABLE"
    assert "changed" in err.message and "the signing secret of webhook w1" in err.message
    assert "VALUERANK_SECRET_KEY" in err.message
    assert err.hint == "restore the previous VALUERANK_SECRET_KEY, or register the webhook again"
    assert err.__cause__ is None and err.__suppress_context__
    for text in (str(err), repr(err), err.message, err.hint or "", str(err.to_dict())):
        assert API_KEY not in text and right not in text and wrong not in text
        assert token not in text


def test_the_default_unreadable_error_is_generic() -> None:
    token = SecretCipher(generate_key()).encrypt(API_KEY)
    with pytest.raises(SecretUnreadable) as info:
        SecretCipher(generate_key()).decrypt(token)
    assert info.value.message.startswith("a stored secret cannot be decrypted")
    assert info.value.hint == "restore the previous VALUERANK_SECRET_KEY"


def test_tampered_token_is_unreadable() -> None:
    cipher = SecretCipher(generate_key())
    token = cipher.encrypt(API_KEY)
    tampered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(SecretUnreadable):
        cipher.decrypt(tampered)
    with pytest.raises(SecretUnreadable):
        cipher.decrypt("not a token at all")


def test_repr_hides_the_secret() -> None:
    key = generate_key()
    cipher = SecretCipher(key)
    assert key not in repr(cipher) and key not in str(cipher)
    assert "hidden" in repr(cipher)
    passphrase_cipher = SecretCipher(PASSPHRASE)
    assert PASSPHRASE not in repr(passphrase_cipher)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(Fernet.generate_key().decode(), True, id="a-new-key"),  # a stable id
        ("", False),
        ("a" * 43 + "=", True),  # 32 bytes of base64
        ("a" * 44, False),  # 33 bytes
        ("é" * 44, False),
        ("+" * 43 + "=", False),  # standard, not url-safe, alphabet
    ],
)
def test_is_fernet_key(text: str, expected: bool) -> None:
    assert is_fernet_key(text) is expected


def test_optional_cipher() -> None:
    assert optional_cipher(None) is None
    key = generate_key()
    cipher = optional_cipher(SecretStr(key))
    assert cipher is not None and cipher.decrypt(SecretCipher(key).encrypt("x")) == "x"
    with pytest.raises(SecretKeyInvalid):
        optional_cipher("short")
