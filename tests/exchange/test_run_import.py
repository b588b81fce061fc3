"""Importing CLI runs into the database, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select
from tests.cli_corpus import Corpus

from valuerank.db import Database
from valuerank.db.tables import definitions, run_scenarios, runs, transcripts
from valuerank.exchange import ImportFormatError, export_run, import_runs, import_zip_bytes
from valuerank.orgs import ensure_org
from valuerank.runs.config import RunConfig

from .helpers import DEFINITION_MD, FIXTURE_RUN, counts, make_zip, transcript_text, unzip

RUN = "2025-06-01.09-30"
FIXTURE_NAME = next(FIXTURE_RUN.glob("transcript.*.md")).name


async def _transcripts(db: Database, run_id: str) -> list[dict[str, Any]]:
    async with db.transaction() as conn:
        rows = await conn.execute(
            select(transcripts)
            .where(transcripts.c.run_id == run_id)
            .order_by(transcripts.c.scenario_id, transcripts.c.model, transcripts.c.sample_index)
        )
        return [dict(r._mapping) for r in rows]


async def test_the_cli_transcripts_folder_becomes_one_run(
    db: Database, org_id: str, cli_corpus: Corpus
) -> None:
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, cli_corpus.root)
    assert imported.cli_run_id == cli_corpus.run_id
    assert imported.transcripts == 3 and imported.created
    async with db.transaction() as conn:
        run = (await conn.execute(select(runs).where(runs.c.id == imported.id))).one()._mapping
        scenarios = (
            await conn.execute(select(run_scenarios).where(run_scenarios.c.run_id == imported.id))
        ).all()
    assert (run["origin"], run["status"], run["cli_run_id"]) == (
        "imported",
        "completed",
        cli_corpus.run_id,
    )
    assert run["definition_id"] is None
    config = RunConfig.model_validate(run["config"])
    assert sorted(config.models) == list(cli_corpus.models)
    assert config.followup_turns == 1  # two turns in every transcript
    # The corpus's scenarios files hold other ids: the scenario comes from the transcripts.
    [scenario] = scenarios
    assert scenario.scenario_id == cli_corpus.base_id
    assert scenario.content["subject"] == cli_corpus.subject
    assert scenario.content["body"].startswith(cli_corpus.body_start)
    rows = await _transcripts(db, imported.id)
    for row in rows:
        path = next(cli_corpus.path("transcripts").glob(f"transcript.*.{row['model']}.*.md"))
        assert row["content"].encode("utf-8") == path.read_bytes()  # verbatim
        assert row["decision_code"] is None  # these answers give no 1-5 rating
        assert row["decision_reason"] == "unparseable"
        assert row["turns"][0]["label"] == "scenario_prompt"


async def test_a_run_folder_with_its_manifest(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, FIXTURE_RUN)
    async with db.transaction() as conn:
        run = (await conn.execute(select(runs).where(runs.c.id == imported.id))).one()._mapping
        ids = (
            await conn.execute(
                select(run_scenarios.c.scenario_id)
                .where(run_scenarios.c.run_id == imported.id)
                .order_by(run_scenarios.c.position)
            )
        ).scalars()
        scenario_ids = list(ids)
    config = RunConfig.model_validate(run["config"])
    assert config.models == ("openai:gpt-4.1", "anthropic:claude-3.5-haiku")  # manifest order
    assert config.judge_models == ("openai:gpt-4.1-mini",)
    assert (config.temperature, config.max_tokens, config.followup_turns) == (0, 1000, 1)
    # scenario_list order, including the scenario without transcripts
    assert scenario_ids == ["scenario_012_pref_neutral", "scenario_012_pref_lean_tell"]
    assert imported.transcripts == 2


def _write_run(folder: Path, run_id: str, answers: dict[tuple[str, str], str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for (scenario, model), answer in answers.items():
        text = transcript_text(run_id, scenario, model, answer)
        (folder / f"transcript.{scenario}.{model}.static.{run_id}.md").write_text(text, "utf-8")


async def test_a_folder_of_several_runs_gives_one_run_per_run_id(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    _write_run(tmp_path, "2025-06-01.09-30", {("s1", "openai:gpt-4.1"): "Rating: 4"})
    _write_run(
        tmp_path / "transcripts",
        "2025-06-02.10-00",
        {("s1", "openai:gpt-4.1"): "2 - somewhat", ("s2", "openai:gpt-4.1"): "I can't choose."},
    )
    async with db.transaction() as conn:
        found = await import_runs(conn, org_id, tmp_path)
    assert [(r.cli_run_id, r.transcripts) for r in found] == [
        ("2025-06-01.09-30", 1),
        ("2025-06-02.10-00", 2),
    ]
    rows = await _transcripts(db, found[1].id)
    decisions = [(r["decision_code"], r["decision_reason"]) for r in rows]
    assert decisions[0][0] == 2
    assert decisions[1] == (None, "refusal")
    [(code, reason)] = [
        (r["decision_code"], r["decision_reason"]) for r in await _transcripts(db, found[0].id)
    ]
    assert code == 4 and reason.startswith("explicit rating")


async def test_importing_the_same_run_twice_writes_nothing_new(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    _write_run(tmp_path / "a", RUN, {("s1", "openai:gpt-4.1"): "Rating: 4"})
    async with db.transaction() as conn:
        [first] = await import_runs(conn, org_id, tmp_path / "a")
        before = await counts(conn)
    async with db.transaction() as conn:
        [again] = await import_runs(conn, org_id, tmp_path / "a")
        assert await counts(conn) == before
    assert (again.id, again.created, again.transcripts) == (first.id, False, 1)
    # Different transcripts under the same run id: imported as a new run next to it.
    _write_run(tmp_path / "a", RUN, {("s2", "openai:gpt-4.1"): "Rating: 1"})
    async with db.transaction() as conn:
        [grown] = await import_runs(conn, org_id, tmp_path / "a")
        assert (await counts(conn))["runs"] == before["runs"] + 1
    assert grown.created and grown.id != first.id and grown.transcripts == 2


async def test_samples_come_from_front_matter_or_file_name(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    model = "openai:gpt-4.1"
    files = {
        f"transcript.s1.{model}.static.{RUN}.md": transcript_text(RUN, "s1", model, "Rating: 1"),
        f"transcript.s1.{model}.static.sample1.{RUN}.md": transcript_text(
            RUN, "s1", model, "Rating: 2", sample_index=1
        ),
        # the name only: a sample written without the front matter key
        f"transcript.s1.{model}.static.sample2.{RUN}.md": transcript_text(
            RUN, "s1", model, "Rating: 3"
        ),
    }
    data = make_zip([(f"transcripts/{name}", text.encode()) for name, text in files.items()])
    async with db.transaction() as conn:
        [imported] = await import_zip_bytes(conn, org_id, data)
    rows = await _transcripts(db, imported.id)
    assert [(r["sample_index"], r["decision_code"]) for r in rows] == [(0, 1), (1, 2), (2, 3)]
    async with db.transaction() as conn:
        config = await conn.scalar(select(runs.c.config).where(runs.c.id == imported.id))
    assert config is not None and config["samples_per_scenario"] == 3


async def test_two_files_for_one_transcript_are_refused(db: Database, org_id: str) -> None:
    text = transcript_text(RUN, "s1", "openai:gpt-4.1", "Rating: 1").encode()
    data = make_zip([("a/transcript.s1.x.md", text), ("b/transcript.s1.y.md", text)])
    async with db.transaction() as conn:
        with pytest.raises(ImportFormatError, match=r"b/transcript\.s1\.y\.md.*a/transcript"):
            await import_zip_bytes(conn, org_id, data, label="two.zip")
        assert (await counts(conn))["runs"] == 0


async def test_a_definition_in_the_folder_is_restored_once(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    for name in ("one", "two"):
        folder = tmp_path / name
        shutil.copytree(FIXTURE_RUN, folder)
        shutil.copy(DEFINITION_MD, folder / "definition.md")
    (tmp_path / "two" / "run_manifest.yaml").write_text(
        (FIXTURE_RUN / "run_manifest.yaml").read_text().replace("2025-03-02.14-05", RUN, 1)
    )
    async with db.transaction() as conn:
        found = await import_runs(conn, org_id, tmp_path)
        stored = (await conn.execute(select(definitions.c.id, definitions.c.name))).all()
    assert [r.cli_run_id for r in found] == ["2025-03-02.14-05", RUN]
    [(definition_id, name)] = stored
    assert name == "exp-Demo_Whistleblower_Loyalty_Honesty"
    assert found[0].definition_id == found[1].definition_id == definition_id
    assert found[0].name == name


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"---\nrun_id: r\n\xff\xfe oops\n", r"bad\.md:3: not UTF-8"),
        (
            b"---\nrun_id: r\nscenario_id: s\ntarget_model: openai:x\n---\n\nno heading here\n",
            r"bad\.md:7: missing the `# Scenario",
        ),
        (b"---\nrun_id: r\nscenario_id: [\n---\n", r"bad\.md:\d+: invalid YAML"),
        (b"---\nrun_id: r\n\x00\n", r"bad\.md:3: .*NUL"),
    ],
)
async def test_a_bad_transcript_imports_nothing(
    db: Database, org_id: str, tmp_path: Path, bad: bytes, message: str
) -> None:
    _write_run(tmp_path, RUN, {("s1", "openai:gpt-4.1"): "Rating: 4"})
    (tmp_path / "transcript.bad.md").write_bytes(bad)
    with pytest.raises(ImportFormatError, match=message):
        async with db.transaction() as conn:
            await import_runs(conn, org_id, tmp_path)
    async with db.transaction() as conn:
        assert await counts(conn) == {"runs": 0, "run_scenarios": 0, "transcripts": 0}


async def test_one_bad_run_refuses_the_whole_import(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    """Every run is checked before the first row is written: the good run is not kept."""
    _write_run(tmp_path / "a", "2025-06-01.09-30", {("s1", "openai:gpt-4.1"): "Rating: 4"})
    _write_run(tmp_path / "b", "2025-06-02.09-30", {("s1", "openai:gpt-4.1"): "Rating: 4"})
    # A manifest whose judge is not a provider:model id cannot make a RunConfig.
    (tmp_path / "b" / "run_manifest.yaml").write_text(
        "run_id: 2025-06-02.09-30\njudge_model: nonsense\n"
    )
    with pytest.raises(ImportFormatError, match=r"run_manifest\.yaml: run 2025-06-02\.09-30"):
        async with db.transaction() as conn:
            await import_runs(conn, org_id, tmp_path)
    async with db.transaction() as conn:
        assert await counts(conn) == {"runs": 0, "run_scenarios": 0, "transcripts": 0}


async def test_another_organisation_imports_its_own_copy(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    _write_run(tmp_path, RUN, {("s1", "openai:gpt-4.1"): "Rating: 4"})
    async with db.transaction() as conn:
        [ours] = await import_runs(conn, org_id, tmp_path)
        other = await ensure_org(conn, "other-lab")
        [theirs] = await import_runs(conn, other, tmp_path)
    assert theirs.created and theirs.id != ours.id


async def test_windows_line_ends_and_a_bom_are_kept_byte_for_byte(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    text = transcript_text(RUN, "s1", "openai:gpt-4.1", "Rating: 5\n\nyes")
    raw = ("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8")
    name = f"transcript.s1.openai:gpt-4.1.static.{RUN}.md"
    (tmp_path / name).write_bytes(raw)
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, tmp_path / name)  # one file
        exported = await export_run(conn, org_id, imported.id)
    [row] = await _transcripts(db, imported.id)
    assert row["content"].encode("utf-8") == raw
    assert row["decision_code"] == 5
    assert unzip(exported)[f"transcripts/{name}"] == raw


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"results\.jsonl:1: not a JSON object"),
        ('{"run_id": "x"}', r"results\.jsonl:1: a record needs a `file`"),
        (
            json.dumps({"file": FIXTURE_NAME, "input_tokens": -3}),
            r"results\.jsonl: `input_tokens` of transcript\..* must be a number",
        ),
    ],
)
async def test_a_bad_results_file_imports_nothing(
    db: Database, org_id: str, tmp_path: Path, line: str, message: str
) -> None:
    shutil.copytree(FIXTURE_RUN, tmp_path / "run")
    (tmp_path / "run" / "results.jsonl").write_text(line + "\n")
    async with db.transaction() as conn:
        with pytest.raises(ImportFormatError, match=message):
            await import_runs(conn, org_id, tmp_path / "run")
        assert (await counts(conn))["runs"] == 0


async def test_a_run_without_transcripts_round_trips(db: Database, org_id: str) -> None:
    manifest = (FIXTURE_RUN / "run_manifest.yaml").read_bytes()
    data = make_zip([("run_manifest.yaml", manifest)])
    async with db.transaction() as conn:
        [imported] = await import_zip_bytes(conn, org_id, data)
        assert (imported.transcripts, imported.created) == (0, True)
        [again] = await import_zip_bytes(conn, org_id, data)
        assert (again.id, again.created) == (imported.id, False)
        files = unzip(await export_run(conn, org_id, imported.id))
    assert yaml.safe_load(files["run_manifest.yaml"])["scenario_list"] == [
        "scenario_012_pref_neutral",
        "scenario_012_pref_lean_tell",
    ]


async def test_samples_of_a_run_id_with_a_dot(db: Database, org_id: str, tmp_path: Path) -> None:
    run_id = "pilot.v2"
    for sample, answer in ((0, "Rating: 2"), (1, "Rating: 4")):
        text = transcript_text(run_id, "s1", "openai:gpt-4.1", answer)
        part = f".sample{sample}" if sample else ""
        (tmp_path / f"transcript.s1.openai:gpt-4.1.static{part}.{run_id}.md").write_text(text)
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, tmp_path)
    assert (imported.cli_run_id, imported.transcripts) == (run_id, 2)
    rows = await _transcripts(db, imported.id)
    assert [(r["sample_index"], r["decision_code"]) for r in rows] == [(0, 2), (1, 4)]


async def test_a_folder_without_a_manifest_uses_its_definition_and_results(
    db: Database, org_id: str, tmp_path: Path
) -> None:
    # Issue 31: without run_manifest.yaml, definition.md and results.jsonl were ignored
    # without a word; a user who put them there expects them used.
    _write_run(tmp_path / "transcripts", RUN, {("s1", "openai:gpt-4.1"): "Rating: 4"})
    shutil.copy(DEFINITION_MD, tmp_path / "definition.md")
    name = f"transcript.s1.openai:gpt-4.1.static.{RUN}.md"
    record = {"file": name, "input_tokens": 12, "output_tokens": 34, "rationale": "why"}
    (tmp_path / "results.jsonl").write_text(json.dumps(record) + "\n")
    async with db.transaction() as conn:
        [imported] = await import_runs(conn, org_id, tmp_path)
    assert imported.definition_id is not None
    [row] = await _transcripts(db, imported.id)
    assert (row["input_tokens"], row["output_tokens"], row["rationale"]) == (12, 34, "why")
