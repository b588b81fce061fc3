"""The decision-distribution bars: widths in proportion to the counts, texts escaped, the
legend kept inside the figure, a model without decisions said in words."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from valuerank.report.distribution_svg import BAR_W, distribution_svg

NS = "{http://www.w3.org/2000/svg}"
SCALE = [(str(c), f"a long label for decision code number {c} <b>") for c in range(1, 6)]


def _row(model: str, counts: list[int]) -> dict[str, object]:
    return {"model": model, "counts": [(str(c), n) for c, n in enumerate(counts, start=1)]}


def test_bars_are_proportional_and_texts_escaped() -> None:
    svg = distribution_svg([_row("m<1>", [1, 0, 2, 0, 1]), _row("idle", [0] * 5)], SCALE)
    root = ET.fromstring(svg)  # well-formed: every text escaped
    assert "m&lt;1&gt;" in svg and "<b>" not in svg
    bars = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    widths = [float(r.get("width", "0")) for r in bars]
    assert widths == [BAR_W / 4, BAR_W / 2, BAR_W / 4]
    assert [r.find(f"{NS}title").text for r in bars][1] == "m<1>: code 3, 2 of 4 (50%)"  # type: ignore[union-attr]
    assert "no decided transcripts" in svg and "n=4" in svg


def test_the_legend_wraps_inside_the_view_box() -> None:
    root = ET.fromstring(distribution_svg([_row("m", [1, 1, 1, 1, 1])], SCALE))
    width = float(root.get("viewBox", "").split()[2])
    legend = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is None]
    assert len(legend) == 5
    assert all(float(r.get("x", "0")) + 12 <= width for r in legend)
    assert len({r.get("y") for r in legend}) > 1  # five long labels need two lines
