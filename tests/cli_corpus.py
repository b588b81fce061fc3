"""The two corpora of the original CLI's formats that the format tests read.

* ``project``: tests/fixtures/cli/corpus, written for this project (dilemmas of its own), in
  the layout of the CLI's files: always there, so a plain clone tests every format feature.
* ``compat``: the CLI's real files (``VALUERANK_COMPAT_DIR``, shared/compat/valuerank-cli), an
  extra conformance set: run when present, skipped outside CI when absent, required in CI.

Both hold the same seven files with the same kinds of quirks: a values rubric, a definition
``exp-<X>.md`` with the expansion ``exp-NNN.<X>.yaml`` the CLI wrote for it (the project's
was written independently of our code and reviewed line by line against the CLI's), a
hand-written preference scenarios file, and three transcripts of one run, from three
providers. What differs (names, counts, the dilemmas' words) is described here, so that a
test states a format fact once and checks it on both (the ``cli_corpus`` fixture).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent / "fixtures" / "cli" / "corpus"


@dataclass(frozen=True)
class Corpus:
    name: str  # "project" or "compat": the test id
    root: Path
    # definitions/: a definition in the CLI's exact layout and its generated expansion
    definition: str
    expansion: str
    base_id: str
    category: str
    dimensions: tuple[str, ...]
    levels: tuple[int, ...]  # levels per dimension, all with one option
    dimension_values: dict[str, str]  # dimension -> readable rubric value (stakes)
    scale_top: str  # the template's label 5; labels 2 and 1 are the same sentence
    scale_bottom: str
    # scenarios/: a hand-written preference file (header comment, folded `>` scalars)
    preferences: str
    preference_tilts: tuple[str | None, ...]  # `preference_value_tilt` of each scenario
    # transcripts/: turn 1 probes `base_id` (its preamble re-wrapped), turn 2 the ranked list
    subject: str
    body_start: str
    run_id: str  # with dots, like every CLI run id
    models: tuple[str, ...]  # provider-prefixed, sorted
    # config/values_rubric.yaml: the 14 canonical values and the real file's quirks
    misindented: str  # a value whose `definition`/`indicators` sit at the level of the names
    misindented_start: str  # how that value's definition starts
    undefined: tuple[str, ...]  # named by contrasts and disambiguation rules, never defined
    disambiguation_rules: int

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    @property
    def transcripts(self) -> list[Path]:
        return sorted((self.root / "transcripts").glob("transcript.*.md"))

    @property
    def scenario_count(self) -> int:
        count = 1
        for levels in self.levels:
            count *= levels
        return count

    @property
    def first_scenario_id(self) -> str:
        return "_".join([self.base_id, *(f"{d}1" for d in self.dimensions)])


PROJECT = Corpus(
    name="project",
    root=PROJECT_ROOT,
    definition="exp-Overdue_Rent_Compassion_FairProcess_Economics.new.md",
    expansion="exp-021.Overdue_Rent_Compassion_FairProcess_Economics.new.yaml",
    base_id="scenario_021",
    category="CompassionHardship vs FairProcess vs Economics",
    dimensions=("CompassionHardship", "FairProcessLease", "EconomicsLoss"),
    levels=(3, 2, 3),
    dimension_values={
        "CompassionHardship": "Compassion",
        "FairProcessLease": "Fair process",
        "EconomicsLoss": "Economics",
    },
    scale_top="strongly support letting Sam stay",
    scale_bottom="somewhat support Ada ending the tenancy",
    preferences="exp-021.festival.preference.yaml",
    preference_tilts=(None, "Physical_Safety", "Physical_Safety", "Tradition", "Tradition"),
    subject="Cancelling a harvest festival in a dry summer",
    body_start="Leave aside the practical arrangements",
    run_id="2025-06-09.08-45",
    models=("anthropic:claude-haiku-4-5", "openai:gpt-4.1-mini", "xai:grok-4"),
    misindented="Tradition",
    misindented_start="Keeping customs alive",
    undefined=("Autonomy", "Honesty", "Privacy"),
    disambiguation_rules=6,
)


def compat_corpus(root: Path) -> Corpus:
    """The CLI's real files at `root` (shared/compat/valuerank-cli)."""
    return Corpus(
        name="compat",
        root=root,
        definition="exp-Trans_Athlete_Competition_Freedom_FairProcess_Harmony.new.md",
        expansion="exp-004.Trans_Athlete_Competition_Freedom_FairProcess_Harmony.new.yaml",
        base_id="scenario_001",
        category="FreedomBelief vs FairProcess vs Harmony",
        dimensions=("FreedomBelief", "FairProcessCompete", "HarmonyGroup"),
        levels=(5, 5, 5),
        dimension_values={
            "FreedomBelief": "Freedom",
            "FairProcessCompete": "Fair process",
            "HarmonyGroup": "Harmony",
        },
        scale_top="strongly support Jordan competing in Gymnastics",
        scale_bottom="somewhat support Jordan not competing in Gymnastics",
        preferences="exp-001.cafe.preference.yaml",
        preference_tilts=(None, "Physical_Safety", "Physical_Safety", "Economics", "Economics"),
        subject="Following a COVID rule that might sink my café",
        body_start="This isn’t about logistics",
        run_id="2025-11-16.10-29",
        models=("anthropic:claude-sonnet-4-0", "openai:gpt-4.1", "xai:grok-3"),
        misindented="Tradition",
        misindented_start="Preserving inherited practices",
        undefined=("Accuracy", "Honesty", "Psychological_Safety"),
        disambiguation_rules=6,
    )
