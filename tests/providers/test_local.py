"""The embedded local model: the real Gemma 3 270M GGUF through llama.cpp, in this process.

The model is loaded once for the whole module (the provider shares one loaded model per
process) and every real generation keeps `max_tokens` small, so this runs in seconds on a
laptop CPU. Without the `local` extra the real-model tests skip locally and fail in CI.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import is_ci

from valuerank.providers import local_model
from valuerank.providers.base import (
    CompletionRequest,
    Message,
    Provider,
    ProviderPermanent,
)
from valuerank.providers.local import (
    LocalProvider,
    build_local_provider,
    load_xllamacpp,
    rating_grammar,
    rating_text_budget,
    unload_local_models,
)
from valuerank.providers.local_model import (
    DEFAULT_MODEL_SHA256,
    LOCAL_EXTRA_HINT,
    LocalModelFile,
    LocalModelSettings,
    clear_verification_cache,
    resolve_local_model,
    sha256_file,
    verify_model_file,
)

_MISSING = [
    name
    for name in ("xllamacpp", local_model.DEFAULT_MODEL_PACKAGE)
    if importlib.util.find_spec(name) is None
]
_REASON = f"the `local` extra is not installed (missing {', '.join(_MISSING)})"
needs_model = pytest.mark.skipif(bool(_MISSING) and not is_ci(), reason=_REASON)

DILEMMA = (
    "A runaway trolley will kill five people unless you pull a lever that diverts it onto a "
    "side track, where it will kill one person. Should you pull the lever? Answer in one short "
    "sentence, then rate from 1 (definitely not) to 5 (definitely yes)."
)
RATING_LINE = re.compile(r"\nRating: ([1-5])$")


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    """The default local model, loaded by its first request and shared by this module."""
    if _MISSING:
        pytest.fail(_REASON + " (CI runs the real local model)")
    built = build_local_provider("gemma3-270m")
    assert isinstance(built, LocalProvider)
    yield built
    unload_local_models()


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MODEL_PATH", "MODEL_CACHE_DIR", "N_CTX", "THREADS", "MAX_TOKENS"):
        monkeypatch.delenv(f"VALUERANK_LOCAL_{name}", raising=False)


def ask(text: str, **kwargs: Any) -> CompletionRequest:
    return CompletionRequest(model="gemma3-270m", messages=(Message("user", text),), **kwargs)


# ---------------------------------------------------------------------------------- real model


@needs_model
async def test_the_real_model_answers(provider: LocalProvider) -> None:
    assert isinstance(provider, Provider)
    assert provider.name == "local"
    completion = await provider.complete(
        ask("What is the capital of France?", max_tokens=24, temperature=0.0, seed=1)
    )
    assert completion.text.strip()
    assert completion.finish_reason in ("stop", "length")
    assert completion.usage.input_tokens > 5
    assert 0 < completion.usage.output_tokens <= 24
    assert completion.latency_ms > 0
    assert completion.synthetic is False
    assert completion.raw["model"] == "gemma3-270m"


@needs_model
async def test_rating_grammar_always_ends_with_a_rating(provider: LocalProvider) -> None:
    request = CompletionRequest(
        model="gemma3-270m",
        messages=(Message("system", "You are a careful ethicist."), Message("user", DILEMMA)),
        max_tokens=48,
        temperature=0.7,
        seed=3,
        hints={"rating_scale": [1, 5]},
    )
    completion = await provider.complete(request)
    match = RATING_LINE.search(completion.text)
    assert match, completion.text
    assert 1 <= int(match.group(1)) <= 5
    assert completion.finish_reason == "stop"
    assert completion.usage.output_tokens <= 48


@needs_model
async def test_a_rating_survives_a_tiny_token_budget(provider: LocalProvider) -> None:
    """Out of tokens before `Rating:`: a second pass completes the line from `Rating: `."""
    completion = await provider.complete(
        ask(DILEMMA, max_tokens=2, temperature=0.0, hints={"rating_scale": [1, 5]})
    )
    assert RATING_LINE.search(completion.text), completion.text
    assert len(completion.raw["responses"]) == 2
    assert completion.finish_reason == "stop"


@needs_model
async def test_json_schema_constrains_the_answer(provider: LocalProvider) -> None:
    schema = {
        "type": "object",
        "properties": {
            "decision": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
            "answer": {"type": "string", "enum": ["yes", "no"]},
        },
        "required": ["decision", "answer"],
        "additionalProperties": False,
    }
    completion = await provider.complete(
        ask(DILEMMA + " Reply in JSON.", max_tokens=24, temperature=0.0, json_schema=schema)
    )
    answer = json.loads(completion.text)
    assert answer["decision"] in (1, 2, 3, 4, 5)
    assert answer["answer"] in ("yes", "no")


@needs_model
async def test_concurrent_calls_share_one_model(provider: LocalProvider) -> None:
    other = build_local_provider("gemma3-270m")
    first, second = await asyncio.gather(
        provider.complete(ask("Name a colour.", max_tokens=4, temperature=0.0)),
        other.complete(ask("Name a fruit.", max_tokens=4, temperature=0.0)),
    )
    assert first.text and second.text
    await other.aclose()  # the shared model stays loaded for the others


# ---------------------------------------------------------------------------------- the file


@needs_model
def test_the_packaged_file_verifies_against_the_published_sha256() -> None:
    package = importlib.import_module(local_model.DEFAULT_MODEL_PACKAGE)
    assert package.EXPECTED_SHA256 == DEFAULT_MODEL_SHA256
    model = resolve_local_model("gemma3-270m")
    assert model.packaged and model.expected_sha256 == DEFAULT_MODEL_SHA256
    path = verify_model_file(model)  # assembles it first if needed
    assert sha256_file(path) == DEFAULT_MODEL_SHA256


def test_verification_rejects_a_wrong_hash_and_is_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clear_verification_cache()
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 1000)
    good = hashlib.sha256(path.read_bytes()).hexdigest()
    wrong = "0" * 64
    with pytest.raises(ProviderPermanent, match=r"is corrupt: its SHA-256 is not the published"):
        verify_model_file(LocalModelFile("tiny", path, wrong))

    calls: list[Path] = []
    real = local_model.sha256_file

    def counting(p: Path) -> str:
        calls.append(p)
        return real(p)

    monkeypatch.setattr(local_model, "sha256_file", counting)
    model = LocalModelFile("tiny", path, good)
    assert verify_model_file(model) == path
    assert verify_model_file(model) == path
    assert len(calls) == 1  # the second check hit the cache
    # A changed file (size and mtime) is hashed again, and fails.
    path.write_bytes(b"GGUF" + b"\1" * 1001)
    with pytest.raises(ProviderPermanent, match="corrupt"):
        verify_model_file(model)
    assert len(calls) == 2


def test_model_path_setting_with_a_tampered_file_is_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "gemma.gguf"
    fake.write_bytes(b"GGUF tampered")
    monkeypatch.setenv("VALUERANK_LOCAL_MODEL_PATH", str(fake))
    model = resolve_local_model("gemma3-270m")
    assert model.path == fake and model.assemble is None
    with pytest.raises(ProviderPermanent) as raised:
        verify_model_file(model)
    message = str(raised.value)
    assert str(fake) in message and "corrupt" in message and DEFAULT_MODEL_SHA256 in message
    assert "VALUERANK_LOCAL_MODEL_PATH" in message


@needs_model
def test_the_packaged_model_is_assembled_and_repaired(tmp_path: Path) -> None:
    settings = LocalModelSettings(model_cache_dir=tmp_path)
    model = resolve_local_model("gemma3-270m", settings)
    assert model.path.parent == tmp_path and not model.path.exists()
    assert verify_model_file(model) == model.path  # joined from the chunk packages
    assert [p.name for p in tmp_path.iterdir()] == [model.path.name]  # no temporary left
    with model.path.open("r+b") as handle:  # flip a byte in the middle
        handle.seek(1_000_000)
        byte = handle.read(1)
        handle.seek(1_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert verify_model_file(model) == model.path  # assembled again from the chunks
    assert sha256_file(model.path) == DEFAULT_MODEL_SHA256
    model.path.unlink()  # 250 MB: not left behind in pytest's kept temporary directories


def test_a_sidecar_sha256_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "custom.gguf"
    path.write_bytes(b"GGUF custom")
    (tmp_path / "custom.gguf.sha256").write_text("f" * 64 + "  custom.gguf\n")
    model = resolve_local_model(str(path))
    assert model.expected_sha256 == "f" * 64
    with pytest.raises(ProviderPermanent, match="corrupt"):
        verify_model_file(model)
    (tmp_path / "custom.gguf.sha256").unlink()
    (tmp_path / "SHA256SUMS").write_text(f"{sha256_file(path)}  custom.gguf\n")
    assert verify_model_file(resolve_local_model(str(path))) == path


# ---------------------------------------------------------------------------------- errors


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(ProviderPermanent, match=r"local model file not found: .*model\.gguf"):
        build_local_provider(str(missing))


def test_an_unknown_name_says_what_is_valid() -> None:
    with pytest.raises(ProviderPermanent, match=r"local:gemma3-270m.*local:/path/to/model\.gguf"):
        build_local_provider("llama-70b")


async def test_a_file_that_is_not_gguf_fails_permanently(tmp_path: Path) -> None:
    path = tmp_path / "notes.gguf"
    path.write_text("these are not weights")
    provider = build_local_provider(str(path))
    request = CompletionRequest(model=str(path), messages=(Message("user", "Hello"),))
    with pytest.raises(ProviderPermanent, match="not a GGUF model file"):
        await provider.complete(request)


def test_without_the_local_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(ProviderPermanent) as raised:
        load_xllamacpp()
    assert LOCAL_EXTRA_HINT in str(raised.value)
    assert "pip install 'valuerank[local]'" in str(raised.value)
    with pytest.raises(ProviderPermanent, match=re.escape(LOCAL_EXTRA_HINT)):
        build_local_provider("gemma3-270m")


def test_without_the_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, local_model.DEFAULT_MODEL_PACKAGE, None)
    with pytest.raises(ProviderPermanent, match=re.escape(LOCAL_EXTRA_HINT)):
        resolve_local_model("gemma3-270m")


def test_malformed_rating_scale_is_permanent() -> None:
    from valuerank.providers.local import rating_scale_of

    assert rating_scale_of({"rating_scale": [1, 5]}) == (1, 5)
    assert rating_scale_of({}) is None
    for bad in ("1-5", [5], [1, "5"], [1, 500], [True, 5]):
        with pytest.raises(ProviderPermanent):
            rating_scale_of({"rating_scale": bad})


def test_rating_grammar_text() -> None:
    assert rating_grammar(1, 3, 40) == (
        'root ::= text "\\nRating: " rating\ntext ::= [^\\n]{1,40}\nrating ::= "1" | "2" | "3"\n'
    )
    assert rating_text_budget(48) == 120
    assert rating_text_budget(4) == 16
    assert rating_text_budget(10_000) == 400
