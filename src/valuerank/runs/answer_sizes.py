"""How long a model's answers were in the organisation's earlier runs of a definition: what
the cost estimate sizes a new run's answers by, where it can, instead of counting every answer
at its max tokens."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.db.tables import runs, transcripts
from valuerank.formats.followups import DEFAULT_FOLLOWUPS
from valuerank.providers.costs import LearnedTokens

# The newest transcripts read: enough for a stable mean, a bounded read on a large workspace.
LEARN_FROM = 2000


async def learned_answer_sizes(
    conn: AsyncConnection,
    org_id: str,
    definition_id: str | None,
    models: Sequence[str],
    *,
    except_run: str,
) -> dict[str, LearnedTokens]:
    """Per model, the mean output tokens of one turn over its newest transcripts in the
    organisation's other runs of this definition version (cached answers left out: they
    repeat one). A model with none is absent."""
    if definition_id is None or not models:
        return {}
    rows = await conn.execute(
        select(transcripts.c.model, transcripts.c.output_tokens, runs.c.config)
        .join(runs, runs.c.id == transcripts.c.run_id)
        .where(
            runs.c.org_id == org_id,
            runs.c.definition_id == definition_id,
            runs.c.id != except_run,
            transcripts.c.model.in_(list(models)),
            transcripts.c.cached.is_(False),
        )
        .order_by(transcripts.c.created_at.desc(), transcripts.c.id)
        .limit(LEARN_FROM)
    )
    per_turn: dict[str, list[float]] = defaultdict(list)
    for model, output_tokens, config in rows:
        followups = int((config or {}).get("followup_turns") or 0)
        turns = 1 + min(max(followups, 0), len(DEFAULT_FOLLOWUPS))
        per_turn[model].append(output_tokens / turns)
    return {
        model: LearnedTokens(round(sum(sizes) / len(sizes)), len(sizes))
        for model, sizes in per_turn.items()
    }
