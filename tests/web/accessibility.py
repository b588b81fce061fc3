"""axe-core run inside a Playwright page: the accessibility check of the browser tests.

The engine is the `axe.min.js` that the axe-playwright-python wheel ships (a dev dependency),
so nothing is fetched at test time. `serious_violations` injects it into the page as it is
now (after any script changed it) and returns the violations of impact `serious` or
`critical`, each with its help text and where it is, for the assertion message."""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.util import find_spec
from typing import Any

from tests.conftest import missing_prerequisite

SERIOUS = frozenset({"serious", "critical"})


@cache
def axe_source() -> str:
    if find_spec("axe_playwright_python") is None:
        missing_prerequisite("axe-playwright-python is not installed (pip install -e '.[dev]')")
    return (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")


async def serious_violations(page: Any) -> list[str]:
    """axe's serious and critical findings on the page (WCAG 2.x A and AA, best practices)."""
    await page.evaluate(axe_source())
    results = await page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    found = []
    for violation in results["violations"]:
        if violation["impact"] not in SERIOUS:
            continue
        where = "; ".join(" ".join(node["target"]) for node in violation["nodes"][:5])
        found.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at {where}")
    return found
