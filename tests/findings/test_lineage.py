"""Lineage results on SQLite and PostgreSQL: the whole tree whichever version is asked about,
the latest completed run of each version by default (named, with the reason a version has
none), runs chosen explicitly, only the models every chosen run has, and why each empty table
is empty; the leaderboard pools every completed run of the tree."""

from __future__ import annotations

import pytest
from tests.lineage_seeding import C, D, U, seed_tree

from valuerank.db import Database
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.findings.lineage import lineage_results
from valuerank.findings.lineage_choice import choose_runs, common_models, tree_order
from valuerank.orgs import ensure_org


def test_choices_order_and_models_without_a_database() -> None:
    listed = {
        "a": [{"id": "r1", "status": "completed"}, {"id": "r2", "status": "completed"}],
        "b": [{"id": "r3", "status": "running"}, {"id": "r4", "status": "failed"}],
        "c": [],
        "d": [{"id": "r5", "status": "completed"}],
    }
    chosen = choose_runs(listed, {"b": "r3"}, {"d"})
    assert (chosen["a"].run_id, chosen["a"].chosen_by) == ("r2", "latest_completed")
    assert (chosen["b"].run_id, chosen["b"].chosen_by) == ("r3", "explicit")
    assert chosen["c"].reason == "no run uses this version"
    assert chosen["d"].reason == "left out of this comparison"
    assert choose_runs(listed, {}, ())["b"].reason == "no completed run (1 failed, 1 running)"

    labels = {"a": "v1", "b": "v1.10", "c": "v1.2", "d": "v1.2.1"}
    parents = {"a": None, "b": "a", "c": "a", "d": "c"}
    assert tree_order(labels, parents) == ["a", "c", "d", "b"]  # v1.2 before v1.10

    compared, dropped = common_models(
        {"a": ["m1", "m2", "m3"], "b": ["m1", "m3"]},
        labels,
        {"a": "run-aaaa1111", "b": "run-bbbb2222"},
    )
    assert compared == ["m1", "m3"]
    [m2] = dropped
    assert m2["model"] == "m2" and [m["label"] for m in m2["missing_from"]] == ["v1.10"]
    assert "v1.10" in m2["reason"]
    assert common_models({}, labels, {}) == ([], [])


async def test_the_whole_tree_with_default_and_explicit_runs(db: Database, org_id: str) -> None:
    tree = await seed_tree(db, org_id)
    lineage = await lineage_results(db, org_id, tree.child)  # opened from a fork
    assert lineage["definition_id"] == tree.child and lineage["root_id"] == tree.root
    versions = {v["label"]: v for v in lineage["versions"]}
    assert [v["label"] for v in lineage["versions"]] == ["v1", "v1.1", "v1.1.1", "v1.2"]
    assert {label: v["relation"] for label, v in versions.items()} == {
        "v1": "ancestor",
        "v1.1": "this",
        "v1.1.1": "descendant",
        "v1.2": "other branch",
    }
    # Default: the latest completed run of each version (not the newer failed one).
    assert versions["v1"]["representative_run_id"] == tree.root_latest
    assert versions["v1"]["chosen_by"] == "latest_completed"
    assert versions["v1.1.1"]["representative_run_id"] == tree.grandchild_run
    assert versions["v1.1"]["no_run_reason"] == "no run uses this version"
    assert versions["v1.2"]["no_run_reason"] == "no completed run (1 running)"
    assert [r["status"] for r in versions["v1"]["runs"]] == ["completed", "completed", "failed"]
    # C is only in v1's run: dropped, and named with the run that lacks it.
    assert lineage["models"]["compared"] == [D, U]
    [dropped] = lineage["models"]["dropped"]
    assert dropped["model"] == C
    assert [m["run_id"] for m in dropped["missing_from"]] == [tree.grandchild_run]
    assert set(versions["v1"]["results"]) == {U, D}
    assert versions["v1"]["models_answered"] == [C, D, U]
    assert versions["v1"]["results"][U] == {"transcripts": 5, "decided": 5, "mean": 4.0}
    [change] = lineage["changes"]
    assert (change["from_label"], change["to_label"]) == ("v1", "v1.1.1")
    assert (change["from_run"], change["to_run"]) == (tree.root_latest, tree.grandchild_run)
    assert set(change["comparison"]["perModel"]) == {U, D}
    assert lineage["empty"] == {"models": None, "changes": None, "aligned": None}

    # Explicit runs: the older run of v1, the running one of v1.2 (two changes from v1).
    chosen = await lineage_results(
        db, org_id, tree.root, run_refs=[tree.root_old, tree.sibling_running]
    )
    versions = {v["label"]: v for v in chosen["versions"]}
    assert versions["v1"]["representative_run_id"] == tree.root_old
    assert versions["v1"]["chosen_by"] == "explicit"
    assert versions["v1.2"]["representative_run_id"] == tree.sibling_running
    assert chosen["models"] == {"compared": [D, U], "dropped": []}
    assert [(c["from_label"], c["to_label"]) for c in chosen["changes"]] == [
        ("v1", "v1.1.1"),
        ("v1", "v1.2"),
    ]
    # v1.2's run answered two scenarios, v1's old one four, v1.1.1's five.
    assert sorted(len(r["versions"]) for r in chosen["aligned"]) == [1, 2, 2, 3, 3]
    assert set().union(*(r["versions"] for r in chosen["aligned"])) == {
        tree.root,
        tree.grandchild,
        tree.sibling,
    }


async def test_every_empty_table_says_why(db: Database, org_id: str) -> None:
    tree = await seed_tree(db, org_id)
    only_root = await lineage_results(db, org_id, tree.root, exclude=[tree.grandchild])
    assert only_root["changes"] == []
    assert only_root["empty"]["changes"].startswith("Only v1 has a run")
    assert only_root["empty"]["models"] is None

    none = await lineage_results(db, org_id, tree.root, exclude=[tree.root, tree.grandchild])
    assert none["models"] == {"compared": [], "dropped": []}
    assert none["empty"]["models"].startswith("No version of this tree has a completed run")
    assert none["empty"]["changes"] == none["empty"]["aligned"] == none["empty"]["models"]

    branches = await lineage_results(
        db, org_id, tree.root, run_refs=[tree.sibling_running], exclude=[tree.root]
    )
    assert branches["changes"] == []
    assert "separate branches" in branches["empty"]["changes"]
    assert branches["aligned"] and branches["empty"]["aligned"] is None

    # Chosen for v1, the failed run (U alone) leaves U the only model compared.
    failed = await lineage_results(db, org_id, tree.root, run_refs=[tree.root_failed])
    assert failed["models"]["compared"] == [U]
    assert [d["model"] for d in failed["models"]["dropped"]] == [D]


async def test_wrong_choices_are_refused_and_other_organisations_are_not_found(
    db: Database, org_id: str
) -> None:
    tree = await seed_tree(db, org_id)
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
    theirs = await seed_tree(db, other)
    with pytest.raises(NotFoundError):
        await lineage_results(db, org_id, theirs.root)
    with pytest.raises(NotFoundError):
        await lineage_results(db, org_id, tree.root, run_refs=[theirs.root_latest])
    with pytest.raises(NotFoundError):
        await lineage_results(db, org_id, tree.root, exclude=[theirs.child])
    with pytest.raises(InvalidInputError, match="both runs of v1"):
        await lineage_results(db, org_id, tree.root, run_refs=[tree.root_old, tree.root_latest])
    with pytest.raises(InvalidInputError, match="left out"):
        await lineage_results(db, org_id, tree.root, run_refs=[tree.root_old], exclude=[tree.root])
