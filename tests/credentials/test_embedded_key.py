"""The embedded default's key file: created once (0600, atomically), reused, never guessed."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from valuerank.credentials.embedded_key import (
    SecretKeyFileInvalid,
    embedded_key_for_url,
    key_file_for,
    load_or_create_key,
)
from valuerank.crypto import is_fernet_key


def test_the_key_file_is_created_private_and_then_reused(tmp_path: Path) -> None:
    path = key_file_for(tmp_path / "valuerank.db")
    assert path == tmp_path / "valuerank.db.secret-key"
    first = load_or_create_key(path)
    assert is_fernet_key(first.get_secret_value())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key(path).get_secret_value() == first.get_secret_value()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["valuerank.db.secret-key"]


def test_concurrent_starts_agree_on_one_key(tmp_path: Path) -> None:
    path = tmp_path / "db.secret-key"
    with ThreadPoolExecutor(8) as pool:
        keys = {k.get_secret_value() for k in pool.map(load_or_create_key, [path] * 32)}
    assert len(keys) == 1
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_an_altered_key_file_is_an_error_not_a_new_key(tmp_path: Path) -> None:
    path = tmp_path / "db.secret-key"
    path.write_text("not a key\n")
    with pytest.raises(SecretKeyFileInvalid) as info:
        load_or_create_key(path)
    assert info.value.code == "SECRET_KEY_FILE_INVALID"
    assert "backup" in (info.value.hint or "")
    assert path.read_text() == "not a key\n"


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@127.0.0.1:5432/test",
        "sqlite:///:memory:",
        "sqlite://",
        "not a url",
    ],
)
def test_only_a_sqlite_file_gets_a_key_file(url: str, tmp_path: Path) -> None:
    assert embedded_key_for_url(url) is None


def test_a_sqlite_file_url_gets_its_key_file(tmp_path: Path) -> None:
    key = embedded_key_for_url(f"sqlite:///{tmp_path / 'x.db'}")
    assert key is not None
    assert (tmp_path / "x.db.secret-key").read_text().strip() == key.get_secret_value()
