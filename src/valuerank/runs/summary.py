"""Who a run is, as every answer about a run begins: its id, name, status, models, sampling
and origin. A shape (`valuerank.shapes`): the run itself is kept for the code that reads the
answer's domain object, and neither dumped nor documented."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, SkipValidation, computed_field
from pydantic.dataclasses import dataclass

from valuerank.definitions.presentation import RunScaleOrder
from valuerank.runs.service import Run
from valuerank.runs.states import RunStatus
from valuerank.shapes import SHAPE, Timestamp


@dataclass(frozen=True, config=SHAPE)
class RunIdentity:
    """Who a run is, the fields of `Run.summary_dict` (`api.schemas.runs.RunSummary` documents
    the answers still built from that dict)."""

    run: Annotated[SkipValidation[Run], Field(exclude=True)]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def id(self) -> str:
        return self.run.id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def name(self) -> str:
        return self.run.name

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> RunStatus:
        return self.run.status

    @computed_field  # type: ignore[prop-decorator]
    @property
    def definition_id(self) -> str | None:
        return self.run.definition_id

    @computed_field  # type: ignore[prop-decorator]
    @property
    def models(self) -> list[str]:
        return list(self.run.config.models)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sample_percentage(self) -> float:
        return self.run.config.sample_percentage

    @computed_field  # type: ignore[prop-decorator]
    @property
    def sample_seed(self) -> int | None:
        return self.run.config.sample_seed

    @computed_field(  # type: ignore[prop-decorator]
        description="Wordings asked of each sampled level combination (expansion mode)."
    )
    @property
    def phrasings(self) -> Literal["first", "all", "random"]:
        return self.run.config.phrasings

    @computed_field(  # type: ignore[prop-decorator]
        description="Scale orders asked; a reversed presentation's id ends in `-reversed` and "
        "its decisions are stored mapped back to the definition's direction."
    )
    @property
    def scale_order(self) -> RunScaleOrder:
        return self.run.config.scale_order

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cli_run_id(self) -> str:
        return self.run.cli_run_id

    @computed_field(description="created, imported, restored…")  # type: ignore[prop-decorator]
    @property
    def origin(self) -> str:
        return self.run.origin

    @computed_field(description="True when its answers come from scripted models.")  # type: ignore[prop-decorator]
    @property
    def synthetic(self) -> bool:
        return self.run.synthetic

    @computed_field(return_type=Timestamp)  # type: ignore[prop-decorator]
    @property
    def created_at(self) -> datetime:
        return self.run.created_at
