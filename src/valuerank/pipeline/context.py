"""What every pipeline handler needs: the database, this worker's providers, and the
retention its maintenance chores apply."""

from __future__ import annotations

from dataclasses import dataclass, field

from valuerank.db.engine import Database
from valuerank.pipeline.calls import ProviderPool
from valuerank.pipeline.maintenance import Retention


@dataclass
class PipelineContext:
    db: Database
    providers: ProviderPool = field(default_factory=ProviderPool)
    # How long `finalize` waits before looking again at a phase that is not done.
    poll_seconds: float = 1.0
    # What the maintenance chores this worker runs keep (the process's settings).
    retention: Retention = field(default_factory=Retention)

    async def aclose(self) -> None:
        await self.providers.aclose()
