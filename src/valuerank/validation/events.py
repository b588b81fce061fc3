"""The live updates of the validation API: `multi_model.validation_added` and
`multi_model.consensus_updated`, stored as events of the queue's `events` table in one
partition per organisation (`multi_model:<org id>`), numbered 1, 2, 3… by the queue's
per-partition sequence and written in the transaction that records the validation. A client
that saw event N reads from N + 1 and misses nothing; the organisation's webhooks get them too
(topics as the types).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.queue.dialect import iso
from valuerank.queue.events import append_event, events_after, last_seq

VALIDATION_ADDED = "multi_model.validation_added"
CONSENSUS_UPDATED = "multi_model.consensus_updated"
UPDATE_TYPES = (VALIDATION_ADDED, CONSENSUS_UPDATED)


def updates_partition(org_id: str) -> str:
    return f"multi_model:{org_id}"


def context(task_id: int, ra_tag_id: str) -> dict[str, str]:
    """The seed's `context` (the task id as a string, as the seed shows it)."""
    return {"task_id": str(task_id), "ra_tag_id": ra_tag_id}


async def publish(
    conn: AsyncConnection,
    org_id: str,
    type: str,
    context: Mapping[str, Any],
    data: Mapping[str, Any],
) -> int:
    """Append one update in this transaction; returns its sequence number."""
    return await append_event(
        conn,
        org_id=org_id,
        partition=updates_partition(org_id),
        type=type,
        data={"context": dict(context), "data": dict(data)},
    )


@dataclass(frozen=True)
class Update:
    seq: int
    type: str
    created_at: datetime
    context: dict[str, Any]
    data: dict[str, Any]

    @property
    def task_id(self) -> str | None:
        value = self.context.get("task_id")
        return None if value is None else str(value)

    def to_dict(self) -> dict[str, Any]:
        """The seed's event shape, plus `seq` (pass the last one seen back to resume)."""
        return {
            "type": self.type,
            "seq": self.seq,
            "timestamp": iso(self.created_at),
            "context": self.context,
            "data": self.data,
        }


async def updates_after(
    conn: AsyncConnection, org_id: str, after: int, limit: int = 200
) -> list[Update]:
    """The organisation's updates with seq > `after`, oldest first."""
    found = await events_after(conn, updates_partition(org_id), after, limit, org_id=org_id)
    return [
        Update(
            seq=e.seq,
            type=str(e.type),
            created_at=e.created_at,
            context=dict(e.data.get("context") or {}),
            data=dict(e.data.get("data") or {}),
        )
        for e in found
    ]


async def last_update_seq(conn: AsyncConnection, org_id: str) -> int:
    return await last_seq(conn, updates_partition(org_id))
