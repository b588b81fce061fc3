"""`valuerank report` end to end on both backends: a judged run of scripted models made by
the CLI and an in-process worker, the report written from it (the numbers those of
`valuerank analyze --json`), with a baseline, the default file name, and the errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from valuerank.refs import short_id

from .conftest import Invoke
from .test_analyze_cmd import judged_pair, unstarted_run

__all__ = ["judged_pair", "unstarted_run"]  # fixtures, shared with test_analyze_cmd


@pytest.fixture(autouse=True)
def _fast_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALUERANK_WORKER_POLL_SECONDS", "0.05")


def _cell(html: str, model: str, dimension: str, field: str) -> str:
    """The text of one cell of the sensitivity table."""
    row = re.search(
        rf'<tr data-model="{re.escape(model)}" data-dimension="{re.escape(dimension)}"'
        rf'.*?data-field="{field}"[^>]*>([^<]*)</td>',
        html,
        re.DOTALL,
    )
    assert row is not None, (model, dimension, field)
    return row.group(1)


def test_report_of_a_run_and_with_a_baseline(
    judged_pair: tuple[str, str, str],
    cli_both: Invoke,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cli = cli_both
    _, a, b = judged_pair

    target = tmp_path / "out" / "report.html"
    # The whole id: ids are UUIDv7, so two runs made seconds apart can share a prefix of 10.
    made = cli("report", b, "-o", str(target), "--json")
    assert made.exit_code == 0, made.stdout + made.stderr
    data = made.json()
    assert data["success"] is True and data["run_id"] == b and data["baseline_run_id"] is None
    assert Path(data["path"]) == target.resolve() and data["bytes"] == target.stat().st_size
    assert {"value_sensitivity", "win_rates", "agreement_heatmap"} <= set(data["figures"])
    html = target.read_text(encoding="utf-8")

    analysis = cli("analyze", b, "--json").json()["analysis"]
    rows = 0
    for model, dims in analysis["valueSensitivity"].items():
        for dim, entry in dims.items():
            shown = _cell(html, model, dim, "coefficient")
            expected = "–" if entry["coefficient"] is None else f"{entry['coefficient']:.2f}"
            assert shown == expected
            rows += 1
    assert rows == len(analysis["meta"]["models"]) * len(analysis["meta"]["dimensions"]) > 0
    assert analysis["sample"]["basis"] in html  # "based on 20 % sample: 5 of 27 scenarios"
    assert 'data-code="SYNTHETIC_MODELS"' in html and 'id="win-rates"' in html
    assert "<script" not in html and "https://" not in html.replace(
        "http://www.w3.org/", ""
    )  # only the SVG namespaces name a URL

    monkeypatch.chdir(tmp_path)
    compared = cli("report", b, "--baseline", a, "--json")
    assert compared.exit_code == 0, compared.stdout + compared.stderr
    assert compared.json()["baseline_run_id"] == a
    default = tmp_path / f"report-{short_id(b)}.html"
    assert Path(compared.json()["path"]) == default.resolve()
    with_baseline = default.read_text(encoding="utf-8")
    assert 'id="comparison-section"' in with_baseline and 'id="fig-forest"' in with_baseline
    table = with_baseline.split('<table id="comparison">', 1)[1].split("</table>", 1)[0]
    assert 'data-model="scripted:utilitarian"' in table  # the one model both runs have
    assert "scripted:agreeable" not in table and "scripted:contrarian" not in table

    human = cli("report", b, "-o", str(tmp_path / "h.html"))
    assert human.exit_code == 0 and "report: " in human.stdout
    assert (tmp_path / "h.html").exists()


def test_report_errors_carry_a_code(unstarted_run: str, cli_both: Invoke, tmp_path: Path) -> None:
    cli = cli_both
    unknown = cli("report", "ffffffff", "-o", str(tmp_path / "x.html"), "--json")
    assert unknown.exit_code == 1 and unknown.json()["code"] == "NOT_FOUND"
    created = {"id": unstarted_run}
    empty = cli("report", created["id"], "-o", str(tmp_path / "x.html"), "--json")
    assert empty.exit_code == 1 and empty.json()["code"] == "NO_TRANSCRIPTS"
    assert "runs wait" in empty.json()["hint"]
    assert not (tmp_path / "x.html").exists()
    human = cli("report", created["id"], "-o", str(tmp_path / "x.html"))
    assert human.exit_code == 1 and "no transcripts" in human.stderr
