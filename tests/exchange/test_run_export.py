"""Run ZIPs: their content, and export → import → export round trips on both backends."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from typing import Any

import pytest
import yaml
from sqlalchemy import select
from tests.cli_corpus import Corpus

from valuerank.db import Database
from valuerank.db.tables import runs
from valuerank.definitions.service import export_markdown
from valuerank.errors import NotFoundError
from valuerank.exchange import export_run, import_runs, import_zip_bytes
from valuerank.exchange.naming import cli_run_id
from valuerank.exchange.reports import SUMMARY_COLUMNS
from valuerank.orgs import ensure_org

from .helpers import FIXTURE_RUN, create_run, unzip

CLI_KEYS = (
    "run_id",
    "created_at",
    "probe_model",
    "prompt_templates",
    "scenario_list",
    "runtime_config",
    "version_hashes",
    "models",
    "judge_model",
)


def _sha12(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _transcripts(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if k.startswith("transcripts/")}


def _scenarios(files: dict[str, bytes]) -> tuple[str, bytes]:
    [item] = [(k, v) for k, v in files.items() if k.startswith("scenarios/")]
    return item


async def _round_trip(db: Database, first: bytes) -> bytes:
    """Import a run ZIP into a fresh organisation and export it again."""
    async with db.transaction() as conn:
        other = await ensure_org(conn, "round-trip")
        [imported] = await import_zip_bytes(conn, other, first)
        assert imported.created
        return await export_run(conn, other, imported.id)


def _assert_same_run(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    assert set(a) == set(b)
    assert _transcripts(a) == _transcripts(b)  # byte for byte
    assert yaml.safe_load(a["run_manifest.yaml"]) == yaml.safe_load(b["run_manifest.yaml"])
    name, scenarios = _scenarios(a)
    assert yaml.safe_load(scenarios) == yaml.safe_load(b[name])


async def test_corpus_transcripts_round_trip(db: Database, org_id: str, cli_corpus: Corpus) -> None:
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, cli_corpus.path("transcripts"))
        first = await export_run(conn, org_id, imported.id)
    files = unzip(first)
    originals = {f"transcripts/{p.name}": p.read_bytes() for p in cli_corpus.transcripts}
    assert len(originals) == 3
    assert _transcripts(files) == originals  # the CLI's own names and bytes
    second = unzip(await _round_trip(db, first))
    _assert_same_run(files, second)
    assert files == second  # nothing else drifts either (summary, results)
    manifest = yaml.safe_load(files["run_manifest.yaml"])
    assert list(manifest) == list(CLI_KEYS[:-1])  # no judge: no judge_model key
    assert manifest["run_id"] == manifest["created_at"] == cli_corpus.run_id
    assert manifest["probe_model"] == "static"
    assert manifest["scenario_list"] == [cli_corpus.base_id]
    assert {m["true_model"]: m["provider"] for m in manifest["models"].values()} == {
        model: model.split(":")[0] for model in cli_corpus.models
    }
    assert list(manifest["models"]) == ["anon_model_001", "anon_model_002", "anon_model_003"]


async def test_fixture_run_with_manifest_round_trips(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, FIXTURE_RUN)
        first = await export_run(conn, org_id, imported.id)
    files = unzip(first)
    second = unzip(await _round_trip(db, first))
    _assert_same_run(files, second)
    assert files == second
    original = yaml.safe_load((FIXTURE_RUN / "run_manifest.yaml").read_text())
    manifest = yaml.safe_load(files["run_manifest.yaml"])
    for key in ("run_id", "created_at", "probe_model", "scenario_list", "models", "judge_model"):
        assert manifest[key] == original[key], key
    for key in ("temperature", "max_tokens", "followup_turns"):
        assert manifest["runtime_config"][key] == original["runtime_config"][key]
    # The follow-up prompt hashes like the CLI's; the CLI's preamble is not in its transcripts.
    assert manifest["prompt_templates"]["followups"] == original["prompt_templates"]["followups"]
    fixtures = sorted(FIXTURE_RUN.glob("transcript.*.md"))
    assert fixtures
    for path in fixtures:
        assert files[f"transcripts/{path.name}"] == path.read_bytes()


async def test_a_run_created_here_exports_and_round_trips(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        run_id = await create_run(conn, org_id)
        created_at = await conn.scalar(select(runs.c.created_at).where(runs.c.id == run_id))
        definition_id = await conn.scalar(select(runs.c.definition_id).where(runs.c.id == run_id))
        assert definition_id is not None
        definition_md = await export_markdown(conn, org_id, definition_id)
        first = await export_run(conn, org_id, run_id[:13])  # a unique prefix is enough
        assert first == await export_run(conn, org_id, run_id)  # same bytes every time
    files = unzip(first)
    assert created_at is not None
    expected_id = cli_run_id(created_at)
    manifest = yaml.safe_load(files["run_manifest.yaml"])
    assert list(manifest) == [*CLI_KEYS, "judge_models"]
    assert manifest["run_id"] == manifest["created_at"] == expected_id
    assert manifest["judge_model"] == "openai:gpt-4.1-mini"
    assert manifest["judge_models"] == ["openai:gpt-4.1-mini", "anthropic:claude-3.5-haiku"]
    assert manifest["runtime_config"] == {
        "temperature": 0.7,
        "max_tokens": 1000,
        "followup_turns": 0,
        "threads": None,
    }
    assert manifest["prompt_templates"] == {
        "preamble": _sha12(b"Think about values."),
        "followups": None,
    }
    name, scenarios = _scenarios(files)
    assert name == "scenarios/exp-Demo_Whistleblower_Loyalty_Honesty.yaml"
    assert manifest["version_hashes"] == {
        "scenarios_hash": _sha12(scenarios),
        "values_rubric_hash": _sha12(files["config/values_rubric.yaml"]),
    }
    loaded = yaml.safe_load(scenarios)
    assert loaded["preamble"] == "Think about values.\n"
    assert list(loaded["scenarios"]) == manifest["scenario_list"]
    assert files["definition.md"] == definition_md.encode()
    names = sorted(_transcripts(files))
    assert len(names) == 8
    sid = manifest["scenario_list"][0]
    assert f"transcripts/transcript.{sid}.openai:gpt-4.1.static.{expected_id}.md" in names
    assert f"transcripts/transcript.{sid}.openai:gpt-4.1.static.sample1.{expected_id}.md" in names

    rows = list(csv.DictReader(io.StringIO(files["summary.csv"].decode())))
    assert tuple(rows[0]) == SUMMARY_COLUMNS
    assert len(rows) == 8
    assert rows[0]["run_id"] == expected_id
    assert {r["decision_code"] for r in rows} == {"2", "3"}
    assert {r["consensus_level"] for r in rows} == {"STRONG"}
    assert rows[0]["rationale"] == "Puts honesty, first; loyalty second."
    assert rows[0]["cost_usd"] == "0.0012"
    results = [json.loads(line) for line in files["results.jsonl"].decode().splitlines()]
    assert len(results) == 8
    assert results[0]["judgments"][0]["prioritized_values"] == ["Honesty"]
    assert results[0]["consensus"]["consensus"]["agreement_level"] == "STRONG"
    assert f"transcripts/{results[0]['file']}" in files

    second = unzip(await _round_trip(db, first))
    _assert_same_run(files, second)
    assert second["definition.md"] == files["definition.md"]
    assert second["config/values_rubric.yaml"] == files["config/values_rubric.yaml"]
    # Tokens and cost come back from results.jsonl; decisions are recomputed from the text.
    again = list(csv.DictReader(io.StringIO(second["summary.csv"].decode())))

    # Rationale, consensus and judgments come back too; only the seeded decision reason
    # differs, as decisions are recomputed from the text.
    def without_reason(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in item.items() if k != key} for item in items]

    assert without_reason(again, "decision_reason") == without_reason(rows, "decision_reason")
    results_again = [json.loads(line) for line in second["results.jsonl"].decode().splitlines()]
    assert without_reason(results_again, "decision") == without_reason(results, "decision")


async def test_runs_of_another_organisation_cannot_be_exported(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        run_id = await create_run(conn, org_id)
        other = await ensure_org(conn, "other-lab")
        with pytest.raises(NotFoundError):
            await export_run(conn, other, run_id)
