"""Fixtures of the provider adapter tests: fake provider servers on loopback, never the internet.

`fake_servers.py` is loaded from here by path (pytest runs with --import-mode=importlib, so
test modules cannot import siblings); tests reach it through the fixtures below and import
its names only for type checking.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.providers.fake_servers import AnthropicServer, GoogleServer, OpenAIServer


def _load_fake_servers() -> ModuleType:
    name = "valuerank_test_fake_servers"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("fake_servers.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


fake_servers = _load_fake_servers()


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy between the SDKs and the fake servers, and no endpoint taken from the machine."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    for variable in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)


# Each server runs for a whole test module (starting SDK clients against it is what costs),
# and is reset before every test that asks for it: an empty script, no recorded requests.


@pytest.fixture(scope="module")
def openai_endpoint() -> Iterator[OpenAIServer]:
    server = fake_servers.OpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def anthropic_endpoint() -> Iterator[AnthropicServer]:
    server = fake_servers.AnthropicServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def google_endpoint() -> Iterator[GoogleServer]:
    server = fake_servers.GoogleServer().start()
    yield server
    server.stop()


@pytest.fixture
def openai_server(openai_endpoint: OpenAIServer) -> OpenAIServer:
    openai_endpoint.reset()
    return openai_endpoint


@pytest.fixture
def anthropic_server(anthropic_endpoint: AnthropicServer) -> AnthropicServer:
    anthropic_endpoint.reset()
    return anthropic_endpoint


@pytest.fixture
def google_server(google_endpoint: GoogleServer) -> GoogleServer:
    google_endpoint.reset()
    return google_endpoint
