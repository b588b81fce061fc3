"""Lineage over three generations and experiment variants that change the definition version
or the sample, on SQLite and PostgreSQL with scripted personas and a real worker; every
figure of a sampled run says what it rests on."""

from __future__ import annotations

import re

from valuerank.db import Database
from valuerank.definitions.service import fork_definition, parse_and_check
from valuerank.findings.lineage import lineage_results
from valuerank.pipeline.experiments import add_variant, create_experiment, experiment_report
from valuerank.refs import short_id
from valuerank.runs.service import get_run

from .analysis_support import DEMO, launch, run_config, running_worker, set_up, wait_completed

MODELS = ("scripted:utilitarian", "scripted:contrarian")
BASIS = re.compile(r"based on (\d+) % sample: (\d+) of 27 scenarios")


async def test_lineage_walks_past_a_version_without_results_to_a_grandchild(
    db: Database, org_id: str
) -> None:
    root = await set_up(db, org_id)
    first = DEMO.read_text().replace("Give me your judgement", "Tell me your judgement")
    second = first.replace("Tell me your judgement", "Share your judgement")
    async with db.transaction() as conn:
        child = await fork_definition(conn, org_id, root, definition=parse_and_check(first))
        grandchild = await fork_definition(
            conn, org_id, child.version.id, definition=parse_and_check(second)
        )
    assert (child.version.version_label, grandchild.version.version_label) == ("v1.1", "v1.1.1")
    root_run = await launch(db, org_id, root, run_config(MODELS))
    leaf_run = await launch(db, org_id, grandchild.version.id, run_config(MODELS))
    async with running_worker(db):
        await wait_completed(db, org_id, root_run)
        await wait_completed(db, org_id, leaf_run)

    lineage = await lineage_results(db, org_id, root)
    versions = {v["label"]: v for v in lineage["versions"]}
    assert set(versions) == {"v1", "v1.1", "v1.1.1"}
    assert versions["v1.1.1"]["depth"] == 2 and versions["v1.1"]["runs"] == []
    assert versions["v1.1"]["representative_run_id"] is None and "results" not in versions["v1.1"]
    assert versions["v1.1.1"]["representative_run_id"] == leaf_run
    for label in ("v1", "v1.1.1"):
        assert versions[label]["basis"] == "based on 30 % sample: 8 of 27 scenarios"
        assert versions[label]["sample"]["finitePopulationCorrection"] is not None
        assert set(versions[label]["results"]) == set(MODELS)
    # v1.1 has no results: v1.1.1 is compared with the nearest ancestor that has, v1.
    [change] = lineage["changes"]
    assert (change["from_label"], change["to_label"]) == ("v1", "v1.1.1")
    assert (change["from"], change["to"]) == (root, grandchild.version.id)
    assert any("Share your judgement" in line for line in change["diff_lines"])
    comparison = change["comparison"]
    assert comparison["scenarios"]["shared"] == 8
    assert comparison["samples"]["pairedPopulation"] == 27
    assert "SAMPLED_RUN" in {w["code"] for w in comparison["warnings"]}
    for entry in comparison["perModel"].values():
        assert entry["interval"]["method"] == "paired_bootstrap_percentile"  # no fpc: paired.py
    assert {frozenset(row["versions"]) for row in lineage["aligned"]} == {
        frozenset({root, grandchild.version.id})
    }
    # Asked about the child, the results are the whole tree still, the child marked.
    below = await lineage_results(db, org_id, child.version.id)
    assert [(v["label"], v["relation"]) for v in below["versions"]] == [
        ("v1", "ancestor"),
        ("v1.1", "this"),
        ("v1.1.1", "descendant"),
    ]
    assert [(c["from"], c["to"]) for c in below["changes"]] == [(root, grandchild.version.id)]


async def test_variants_that_change_the_definition_version_and_the_sample(
    db: Database, org_id: str
) -> None:
    root = await set_up(db, org_id)
    forked = DEMO.read_text().replace("Give me your judgement", "Tell me your judgement")
    async with db.transaction() as conn:
        child = await fork_definition(conn, org_id, root, definition=parse_and_check(forked))
    baseline = await launch(db, org_id, root, run_config(MODELS))
    async with db.transaction(immediate=True) as conn:
        experiment = await create_experiment(
            conn, org_id, name="wording and sample", hypothesis="none", baseline_run=baseline
        )
        version = await add_variant(
            conn, org_id, experiment.id, {"definition_id": short_id(child.version.id)}
        )
        larger = await add_variant(conn, org_id, experiment.id, {"sample_percentage": 60})
    async with db.transaction() as conn:
        version_run = await get_run(conn, org_id, version.run.id)
        larger_run = await get_run(conn, org_id, larger.run.id)
    assert version_run.definition_id == child.version.id
    assert version.changes == {"definition_id": child.version.id}  # the prefix resolved
    assert version_run.config.sample_percentage == 30 and version_run.config.models == MODELS
    assert larger_run.definition_id == root and larger_run.config.sample_percentage == 60
    async with running_worker(db):
        for run_id in (baseline, version.run.id, larger.run.id):
            await wait_completed(db, org_id, run_id)

    report = await experiment_report(db, org_id, experiment.id)
    entries = {e["run_id"]: e for e in report["variants"]}
    assert set(entries) == {version.run.id, larger.run.id}
    for entry in entries.values():
        assert entry["status"] == "completed" and entry["comparison"]["status"] == "completed"
        assert entry["comparison"]["result"]["models"]["shared"] == sorted(MODELS)

    other_version = entries[version.run.id]["comparison"]["result"]
    assert other_version["comparisonRunId"] == version.run.id
    assert other_version["scenarios"]["shared"] == 8  # the fork keeps the scenario ids

    bigger = entries[larger.run.id]["comparison"]["result"]
    samples = bigger["samples"]
    assert samples["baseline"]["basis"] == "based on 30 % sample: 8 of 27 scenarios"
    match = BASIS.fullmatch(samples["comparison"]["basis"])
    assert match is not None and match.group(1) == "60"
    # Nested samples: the 60 % run holds every scenario of the 30 % one.
    assert bigger["scenarios"]["shared"] == 8 and bigger["scenarios"]["baselineOnly"] == 0
    assert bigger["scenarios"]["comparisonOnly"] == int(match.group(2)) - 8
    assert samples["pairedPopulation"] == 27
    sampled = [w for w in bigger["warnings"] if w["code"] == "SAMPLED_RUN"]
    assert sampled and "60 % sample" in sampled[0]["message"]
