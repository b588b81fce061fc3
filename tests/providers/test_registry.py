"""The adapter registry: one registration per adapter kind (issue 23).

A kind registered here (`toy-sdk`: toy_sdk_adapter.py, on the fake OpenAI server) is seen by
every reader with no other file changed: presets and keys, the model check, the catalog, the
registry's seed and listing, the cost estimate, `build_provider`, and the workers of a run.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.waiting import run_report_when

import valuerank
from valuerank.db import Database
from valuerank.definitions.service import import_definition
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.context import PipelineContext
from valuerank.pipeline.handlers import register_pipeline_handlers
from valuerank.pipeline.launch import launch_run
from valuerank.providers.base import CompletionRequest, Message, MissingCredential
from valuerank.providers.catalog import (
    CATALOG,
    catalog_model,
    models_for_provider,
    registered_models,
)
from valuerank.providers.check import model_problem
from valuerank.providers.costs import cost_usd, estimate_run_cost
from valuerank.providers.factory import api_key_from_env, build_provider, require_api_key
from valuerank.providers.presets import PRESETS, UnknownProvider, known_providers, preset_for
from valuerank.providers.registry import (
    BUILTIN_ADAPTERS,
    UnknownAdapter,
    adapter_spec,
    adapter_specs,
    register_adapter,
    registered_adapter,
)
from valuerank.providers.specs import AdapterSpec, ProviderPreset, catalog_entry, sdk_preset
from valuerank.queue import QueueSettings, Worker
from valuerank.registry import list_models
from valuerank.runs.config import RunConfig
from valuerank.runs.states import RunStatus
from valuerank.shapes import dump

if TYPE_CHECKING:
    from tests.providers.fake_servers import OpenAIServer

TOY_MODULE = "toy_sdk_adapter"
TOY_PRICES = (1.0, 2.0)
TOY = AdapterSpec(
    kind="toy-sdk",
    module=TOY_MODULE,
    factory="build_toy_provider",
    presets=(
        sdk_preset("toy", "toy-sdk", None, "TOY_API_KEY", seed_param="random_seed"),
        sdk_preset("toy-local", "toy-sdk", "http://127.0.0.1:9/v1", None, local=True),
    ),
    models=(
        catalog_entry(
            "toy",
            "toy-large",
            "Toy Large",
            "small",
            ("system_prompt", "temperature", "seed"),
            TOY_PRICES,
            aliases=("toy-l",),
        ),
    ),
)
REQUEST = CompletionRequest(
    model="toy-large", messages=(Message("user", "Rate 1-5."),), seed=7, max_tokens=20
)
DEMO = Path(valuerank.__file__).parent / "demo" / "exp-demo-whistleblower.md"
FAST = QueueSettings(poll_seconds=0.02, heartbeat_seconds=0.05, retry_base_seconds=0.0)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[AdapterSpec]:
    """TOY registered for one test, its module importable by name and not yet imported."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    sys.modules.pop(TOY_MODULE, None)
    try:
        with registered_adapter(TOY) as spec:
            yield spec
    finally:
        sys.modules.pop(TOY_MODULE, None)


def test_the_builtin_adapters_serve_every_preset_and_model_once() -> None:
    assert adapter_specs() == BUILTIN_ADAPTERS
    served = [preset for spec in adapter_specs() for preset in spec.presets]
    assert {p.name: p for p in served} == dict(PRESETS) and len(served) == len(PRESETS)
    assert registered_models() == CATALOG
    for spec in adapter_specs():
        assert {p.kind for p in spec.presets} == {spec.kind}
        assert adapter_spec(spec.kind) is spec


@pytest.mark.parametrize("spec", BUILTIN_ADAPTERS, ids=lambda s: s.kind)
def test_every_builtin_factory_exists(spec: AdapterSpec) -> None:
    assert callable(getattr(importlib.import_module(spec.module), spec.factory))


def _spec(**changes: object) -> AdapterSpec:
    fields: dict[str, object] = {
        "kind": "k",
        "module": "m",
        "factory": "f",
        "presets": (ProviderPreset("p", "k"),),
        **changes,
    }
    return AdapterSpec(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"presets": ()}, "serves no preset"),
        ({"presets": (ProviderPreset("p", "other"),)}, "of kind 'other'"),
        ({"presets": (ProviderPreset("Bad Name", "k"),)}, "cannot prefix a model id"),
        ({"presets": (ProviderPreset("p", "k"), ProviderPreset("p", "k"))}, "twice"),
        ({"models": (catalog_entry("q", "m1", "M1", "small", (), (1, 1)),)}, "of no preset"),
        ({"module": ""}, "needs a kind, a module and a factory"),
    ],
)
def test_inconsistent_specs_are_refused(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _spec(**changes)


def test_taken_kinds_and_provider_names_are_refused_and_nothing_changes() -> None:
    before = dict(PRESETS)
    with pytest.raises(ValueError, match="'openai' is already registered"):
        register_adapter(_spec(kind="openai", presets=(ProviderPreset("fresh", "openai"),)))
    with pytest.raises(ValueError, match="already registered: groq"):
        register_adapter(_spec(presets=(ProviderPreset("p", "k"), ProviderPreset("groq", "k"))))
    assert dict(PRESETS) == before and "fresh" not in PRESETS
    with pytest.raises(UnknownAdapter):
        adapter_spec("k")


def test_a_name_is_a_kind_or_a_preset_never_both(toy: AdapterSpec) -> None:
    # A native `mistral` adapter beside the OpenAI-compatible `mistral` preset: refused, so
    # `mistral:…` keeps meaning the preset (on the openai adapter) and nothing else.
    before = dict(PRESETS)
    native = _spec(kind="mistral", presets=(ProviderPreset("mistral-native", "mistral"),))
    with pytest.raises(
        ValueError, match="'mistral' is the name of a provider preset of adapter 'openai'"
    ):
        register_adapter(native)
    # A preset named as another adapter's kind (the toy's kind has no preset of that name).
    with pytest.raises(ValueError, match="already registered as adapter kinds: toy-sdk"):
        register_adapter(_spec(presets=(ProviderPreset("toy-sdk", "k"),)))
    assert dict(PRESETS) == before and preset_for("mistral").kind == "openai"
    with pytest.raises(UnknownAdapter):
        adapter_spec("mistral")
    with pytest.raises(UnknownAdapter):
        adapter_spec("k")
    # Every builtin name has one meaning: a kind's own preset is its only namesake.
    for spec in adapter_specs():
        others = [p for p in PRESETS.values() if p.name == spec.kind and p.kind != spec.kind]
        assert not others, spec.kind


def test_a_registered_adapter_is_known_to_every_lookup(toy: AdapterSpec) -> None:
    assert preset_for("toy").kind == "toy-sdk" and PRESETS["toy-local"].local
    assert {"toy", "toy-local"} <= set(known_providers())
    assert api_key_from_env("toy", {"TOY_API_KEY": " tk "}) == "tk"
    with pytest.raises(MissingCredential, match="TOY_API_KEY"):
        require_api_key("toy", None)
    assert require_api_key("toy-local", None) is None
    # The override variable of a hyphenated name is one a shell can set.
    assert preset_for("toy-local").base_url_env == "VALUERANK_TOY_LOCAL_BASE_URL"
    assert model_problem("toy:toy-large") is None
    model = catalog_model("toy:toy-l")
    assert model is not None and model.name == "toy-large"
    assert models_for_provider("toy") == toy.models
    assert registered_models() == (*CATALOG, *toy.models)
    estimate = estimate_run_cost(
        prompts=10, models=[model], prompt_tokens=1000, output_tokens_per_turn=500
    )
    assert estimate.complete and estimate.cost_usd == cost_usd(10_000, 5_000, *TOY_PRICES)


def test_unregistering_leaves_the_builtins_as_they_were() -> None:
    with registered_adapter(TOY):
        assert "toy" in PRESETS
    assert adapter_specs() == BUILTIN_ADAPTERS and registered_models() == CATALOG
    assert catalog_model("toy:toy-large") is None
    assert model_problem("toy:toy-large") is not None
    with pytest.raises(UnknownProvider):
        preset_for("toy")
    with pytest.raises(UnknownAdapter):
        adapter_spec("toy-sdk")
    with registered_adapter(TOY):  # and it can come back
        assert preset_for("toy").kind == "toy-sdk"


async def test_build_provider_imports_the_adapter_on_first_use_and_it_answers(
    toy: AdapterSpec, openai_server: OpenAIServer
) -> None:
    with pytest.raises(MissingCredential):  # the key is demanded before anything is imported
        build_provider("toy", api_key=None, environ={})
    assert TOY_MODULE not in sys.modules
    environ = {"VALUERANK_TOY_BASE_URL": openai_server.base_url}
    provider = build_provider("toy", api_key="toy-key", environ=environ, timeout=5)
    assert TOY_MODULE in sys.modules
    try:
        completion = await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    assert provider.name == "toy"
    assert completion.text.startswith("Rating: 4") and completion.usage.total_tokens == 18
    sent = openai_server.last
    assert (sent.path, sent.headers["authorization"]) == ("/v1/chat/completions", "Bearer toy-key")
    assert sent.body["random_seed"] == 7 and "seed" not in sent.body  # the preset's seed_param


async def test_a_run_is_checked_estimated_and_probed_through_a_registered_adapter(
    db: Database, org_id: str, toy: AdapterSpec, openai_server: OpenAIServer
) -> None:
    model_id = "toy:toy-large"
    environ = {"TOY_API_KEY": "toy-key-0000", "VALUERANK_TOY_BASE_URL": openai_server.base_url}
    config = RunConfig(models=(model_id,), sample_percentage=20, sample_seed=0, followup_turns=0)
    async with db.transaction() as conn:
        stored, _ = await import_definition(conn, org_id, DEMO.read_text(), source_file=DEMO.name)
        # Not allow_unknown_models: the registry must know the model from its adapter's spec.
        launched = await launch_run(conn, org_id, stored.version.id, config, environ=environ)
        [listed] = await list_models(conn, provider="toy")
    assert (listed.id, listed.display_name) == (model_id, "Toy Large")
    assert (listed.input_price_per_mtok, listed.output_price_per_mtok) == TOY_PRICES
    [estimate] = launched.estimate.models
    assert estimate.model == model_id and estimate.cost_usd is not None
    assert estimate.cost_usd == cost_usd(estimate.input_tokens, estimate.output_tokens, *TOY_PRICES)
    probes = launched.created.jobs_planned
    assert probes >= 1

    worker = Worker(db, settings=FAST, concurrency=4)
    ctx = PipelineContext(db, providers=ProviderPool(environ=environ), poll_seconds=0.1)
    register_pipeline_handlers(worker, ctx)
    task = asyncio.create_task(worker.run_forever())
    run_id = launched.created.run.id
    try:
        report = await run_report_when(db, org_id, run_id)
    finally:
        worker.stop()
        await task
        await ctx.aclose()
    assert report.run.status is RunStatus.COMPLETED, dump(report)
    calls = openai_server.requests
    assert len(calls) == probes
    assert {c.headers["authorization"] for c in calls} == {"Bearer toy-key-0000"}
    assert {c.body["model"] for c in calls} == {"toy-large"}
    # Each call: the fake server's 11 input and 7 output tokens at the spec's prices.
    assert report.cost_usd == pytest.approx(probes * cost_usd(11, 7, *TOY_PRICES))
