"""`valuerank.Client` on a local database and through a server gives the same results and
the same dataframes for the same run, on both backends."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal
from tests.conftest import TestDatabase
from tests.servers import running, serving

from valuerank import Client
from valuerank.api import create_app
from valuerank.db import Database
from valuerank.errors import MissingDependencyError, ValueRankError
from valuerank.sdk.client import ServerError
from valuerank.sdk.frames import table_frame

from .conftest import JUDGE, TARGETS, TOKEN, api_settings, complete_run, provision_admin


@dataclass
class Read:
    """Everything the tests compare, read through one client."""

    decisions: pd.DataFrame
    transcripts: pd.DataFrame
    analysis: pd.DataFrame
    run: dict[str, Any]
    runs: list[str]
    definitions: list[dict[str, Any]]
    definition: dict[str, Any]
    transcript: dict[str, Any]


def _read(client: Client, run_id: str) -> Read:
    with client:
        run = client.run(run_id[:8])  # a unique prefix, as everywhere
        decisions = run.decisions_df()
        first = str(decisions["transcript_id"].iloc[0])
        definitions = client.definitions()
        return Read(
            decisions=decisions,
            transcripts=run.transcripts_df(),
            analysis=run.analysis_df(),
            run={k: run.data[k] for k in ("id", "name", "status", "models", "transcripts")},
            runs=[r.id for r in client.runs()],
            definitions=[d.data for d in definitions],
            definition=client.definition(definitions[0].id).data,
            transcript=client.transcript(first).data,
        )


async def test_a_local_database_and_a_server_give_the_same_frames(
    db: Database, org_id: str, database_url: TestDatabase, completed: str
) -> None:
    local = await asyncio.to_thread(_read, Client(database_url.url), completed)
    await provision_admin(db, org_id)
    async with running(create_app(db, org_id=org_id, settings=api_settings())) as url:
        remote = await asyncio.to_thread(_read, Client(url=url, token=TOKEN), completed)

    assert_frame_equal(local.decisions, remote.decisions)
    assert_frame_equal(local.transcripts, remote.transcripts)
    assert_frame_equal(local.analysis, remote.analysis)
    assert local.run == remote.run and local.runs == remote.runs == [completed]
    assert local.definitions == remote.definitions
    assert local.definition == remote.definition and "content" in local.definition
    assert local.transcript == remote.transcript

    # What the frame holds: a row per transcript, both targets, the run's levels and judge.
    frame = local.decisions
    assert len(frame) == local.run["transcripts"] > 0
    assert set(frame["model"]) == set(TARGETS)
    assert [c for c in frame.columns if c.startswith("dim.")] == [
        "dim.Cost",
        "dim.Harm",
        "dim.Tenure",
    ]
    assert frame["decision"].notna().all() and not frame["refusal"].any()
    assert frame["judged"].all()
    assert frame[f"judge.{JUDGE}.decision"].notna().all()
    assert all(isinstance(v, list) for v in frame[f"judge.{JUDGE}.prioritized"])
    assert set(frame["scale_order"]) == {"as-written"} and set(frame["phrasing"]) == {""}
    assert (frame["input_tokens"] > 0).all() and (frame["latency_ms"] >= 0).all()
    assert str(frame["decision"].dtype) == "Int64" and str(frame["refusal"].dtype) == "boolean"
    # The text columns come only with transcripts_df.
    assert set(local.transcripts.columns) - set(frame.columns) == {"answer", "turns", "rationale"}
    assert local.transcripts["answer"].str.contains("Rating:").all()
    # The analysis: a value sensitivity per model and dimension, a win rate per model and value.
    # (a model whose answers the judge read as neutral on every value has no win rate: the
    # scripted answers are seeded by the run's id, so which one varies)
    measures = local.analysis.groupby("measure")["model"].nunique().to_dict()
    assert measures["value_sensitivity"] == 2 and 1 <= measures["win_rate"] <= 2
    rates = local.analysis[local.analysis["measure"] == "win_rate"]
    assert rates["estimate"].between(0, 1).all() and (rates["n"] >= 0).all()
    sensitivity = local.analysis[local.analysis["measure"] == "value_sensitivity"]
    assert set(sensitivity["name"]) == {"Cost", "Harm", "Tenure"}


async def test_the_frames_agree_with_the_run_s_own_figures(
    database_url: TestDatabase, completed: str
) -> None:
    def _go() -> None:
        with Client(database_url.url) as client:
            run = client.run(completed)
            frame = run.decisions_df()
            analysis = run.analysis()
            for model, figures in analysis.per_model.items():
                rows = frame[frame["model"] == model]
                assert figures["sampleSize"] == len(rows)
                assert figures["overall"]["mean"] == pytest.approx(
                    rows["decision"].astype(float).mean(), rel=1e-5
                )
            # A transcript's judge readings, as the transcript reads them.
            first = frame.iloc[0]
            transcript = client.transcript(str(first["transcript_id"]))
            (reading,) = transcript.judgments
            assert reading["judge_model"] == JUDGE
            assert reading["decision"] == first[f"judge.{JUDGE}.decision"]
            assert reading["prioritized_values"] == first[f"judge.{JUDGE}.prioritized"]

    await asyncio.to_thread(_go)


async def test_errors_carry_codes_either_way(
    db: Database, org_id: str, database_url: TestDatabase
) -> None:
    def _local() -> None:
        with Client(database_url.url) as client:
            with pytest.raises(ValueRankError) as caught:
                client.run("no-such-run")
            assert caught.value.code == "NOT_FOUND"

    await asyncio.to_thread(_local)
    await provision_admin(db, org_id)
    async with running(create_app(db, org_id=org_id, settings=api_settings())) as url:

        def _remote() -> None:
            client = Client(url=url, token=TOKEN)
            with pytest.raises(ServerError) as caught:
                client.run("no-such-run")
            assert caught.value.code == "NOT_FOUND"
            with pytest.raises(ServerError) as refused:
                Client(url=url, token="vrt_not-a-token").runs()
            assert refused.value.code == "UNAUTHORIZED" and refused.value.hint

        await asyncio.to_thread(_remote)
    with pytest.raises(ServerError) as bad:
        Client(url="ftp://example.org", token=TOKEN)
    assert bad.value.code == "INVALID_API_URL"
    with pytest.raises(ValueRankError, match="not both"):
        Client("sqlite:///x.db", url="http://127.0.0.1:1")


def test_a_frame_without_pandas_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # import pandas fails
    with pytest.raises(MissingDependencyError) as caught:
        table_frame(["run_id"], [])
    assert caught.value.code == "MISSING_DEPENDENCY"
    assert caught.value.hint == "pip install 'valuerank[data]'"


async def test_a_comparison_is_the_same_either_way(
    db: Database, org_id: str, database_url: TestDatabase
) -> None:
    """Two runs of the same sample compared on a local database (computed in the call) and
    on a server (queued, computed by its worker, waited for)."""
    seeded = ("--sample-seed", "7")
    first = await asyncio.to_thread(complete_run, database_url.url, *seeded)
    second = await asyncio.to_thread(complete_run, database_url.url, *seeded)

    def _local() -> dict[str, Any]:
        with Client(database_url.url) as client:
            found = client.compare(first, second)
            assert found.status == "completed" and found.result is not None
            return found.data

    local = await asyncio.to_thread(_local)
    await provision_admin(db, org_id)
    async with serving(db, org_id, work=True, settings=api_settings()) as served:

        def _remote() -> dict[str, Any]:
            found = Client(url=served.base, token=TOKEN, timeout=120).compare(first, second)
            assert found.status == "completed", found.data
            return found.data

        remote = await asyncio.to_thread(_remote)
    assert (local["baseline_run_id"], local["comparison_run_id"]) == (first, second)
    when = ("computedAt", "durationMs")  # computed twice: only when and how long differ
    assert {k: v for k, v in remote["result"].items() if k not in when} == {
        k: v for k, v in local["result"].items() if k not in when
    }


async def test_the_frame_says_how_each_scenario_was_asked(
    db: Database, database_url: TestDatabase
) -> None:
    """Every wording and both scale orders: a row per presentation, its combination, its
    phrasing and its order; decisions already in the definition's direction."""
    asked = ("--phrasings", "all", "--scale-order", "both", "--sample-seed", "3")
    run_id = await asyncio.to_thread(complete_run, database_url.url, *asked)

    def _frame() -> pd.DataFrame:
        with Client(database_url.url) as client:
            return client.run(run_id).decisions_df()

    frame = await asyncio.to_thread(_frame)
    assert set(frame["scale_order"]) == {"as-written", "reversed"}
    reversed_ = frame[frame["scale_order"] == "reversed"]
    assert reversed_["scenario_id"].str.endswith("-reversed").all()
    twins = reversed_["scenario_id"].str.removesuffix("-reversed")
    assert twins.isin(frame["scenario_id"]).all()  # each asked as written too
    worded = frame[frame["phrasing"] != ""]
    assert len(worded) > 0  # the demo's levels have second wordings (Tenure3o2, …)
    for _, row in worded.iterrows():
        assert row["phrasing"] in row["scenario_id"] and row["phrasing"] not in row["scenario"]
    # Each combination is asked as written and reversed, in every wording, by each model.
    per_combination = frame.groupby(["model", "scenario"])["scale_order"].nunique()
    assert (per_combination == 2).all()
    assert frame["decision"].between(1, 5).all()
