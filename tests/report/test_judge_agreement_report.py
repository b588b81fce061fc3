"""The report's judge agreement section (`analysis.judgeAgreement`): every α, κ and share on
the page is the analysis JSON's, people's comparisons appear when people read transcripts,
and a run nobody read has no section."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from valuerank.analysis import analyze_basic
from valuerank.analysis.readings import JudgeReadings
from valuerank.analysis.synthetic import SyntheticSpec, synthetic_run
from valuerank.report import ReportDocument, RunHeader, render_report

HEADER = RunHeader(
    id="0193a1b2-c3d4-7e5f-8a9b-0123456789ab",
    name="judged",
    status="completed",
    created_at="2026-01-02 10:00 UTC",
    finished_at="2026-01-02 10:05 UTC",
    models=["provider:model-00"],
    synthetic=True,
)


def _basic(people: bool) -> dict[str, Any]:
    data = synthetic_run(SyntheticSpec(models=2, scenarios=20, seed=5))
    rng = np.random.default_rng(5)
    units = 40
    truth = rng.integers(0, 3, (units, 1, 2))
    reading = np.where(rng.random((units, 3, 2)) < 0.7, truth, rng.integers(0, 3, (units, 3, 2)))
    if not people:
        reading = reading[:, :2]
    else:
        reading[20:, 2] = -1
    readers = ("judge:a", "judge:b", "human:ann@example.org")[: reading.shape[1]]
    readings = JudgeReadings(
        readers=readers,
        values=("Care", "Liberty"),
        unit_cluster=np.arange(units) // 2,
        reading=reading.astype(np.int8),
        consensus=truth[:, 0].astype(np.int8),
        human=tuple(r.startswith("human:") for r in readers),
    )
    return analyze_basic(replace(data, readings=readings))


def _render(basic: dict[str, Any]) -> str:
    return render_report(
        ReportDocument(
            run=HEADER, basic=basic, generated_at=datetime(2026, 1, 3, tzinfo=UTC), figures={}
        )
    )


def _cells(html: str, key: str, field: str) -> dict[str, float | None]:
    found = {}
    for row in re.finditer(rf'<tr {key}="([^"]+)">(.*?)</tr>', html, re.S):
        cell = re.search(rf'data-field="{field}" data-value="([^"]*)"', row.group(2))
        assert cell is not None, row.group(0)
        found[row.group(1)] = json.loads(cell.group(1))
    return found


def test_every_figure_is_the_jsons() -> None:
    basic = _basic(people=True)
    section = basic["judgeAgreement"]
    html = _render(basic)
    assert 'id="judge-agreement-section"' in html
    alphas = _cells(html, "data-value-name", "alpha")
    assert alphas == {v: e["alpha"]["value"] for v, e in section["values"].items()}
    consensus, people = html.split('id="judge-people"')
    shares = _cells(consensus.split('id="judge-consensus"')[1], "data-judge", "share")
    assert shares == {j: e["share"]["value"] for j, e in section["withConsensus"].items()}
    kappas = _cells(people, "data-judge", "kappa")
    assert kappas == {j: e["kappa"]["value"] for j, e in section["withPeople"].items()}
    assert "human:ann@example.org" in html


def test_no_people_no_people_table_and_nobody_no_section() -> None:
    html = _render(_basic(people=False))
    assert 'id="judge-consensus"' in html and 'id="judge-people"' not in html
    unread = analyze_basic(synthetic_run(SyntheticSpec(models=2, scenarios=10)))
    assert unread["judgeAgreement"] is None
    assert 'id="judge-agreement-section"' not in _render(unread)
