"""The names of a run's life in its events and webhook topics: `run_paused`, `run_resumed`,
`run_cancelled`, `run_reaped`, `run_complete`.

The queue's generic names for a partition (`partition_paused`, …) are what runs wrote before;
those rows are still read under the new names, and a webhook subscribed to an old name still
gets the event under its new one (`TOPIC_ALIASES`, part of the runs' queue hooks:
`valuerank.runs.hooks.RUN_HOOKS`).
"""

from __future__ import annotations

from valuerank.queue.events import EventType

RUN_PAUSED = "run_paused"
RUN_RESUMED = "run_resumed"
RUN_CANCELLED = "run_cancelled"
RUN_REAPED = "run_reaped"  # maintenance closed the run (no job was left to end it)
RUN_COMPLETE = "run_complete"
RUN_EVENTS = (RUN_PAUSED, RUN_RESUMED, RUN_CANCELLED, RUN_REAPED, RUN_COMPLETE)

# The old (generic) name of each: rows written before, and old webhook subscriptions.
OLD_NAMES = {
    EventType.PARTITION_PAUSED.value: RUN_PAUSED,
    EventType.PARTITION_RESUMED.value: RUN_RESUMED,
    EventType.PARTITION_CANCELLED.value: RUN_CANCELLED,
    EventType.PARTITION_REAPED.value: RUN_REAPED,
    EventType.PARTITION_COMPLETE.value: RUN_COMPLETE,
}


def run_event_name(type: str) -> str:
    """The current name of a run event's type (an old name read as its new one)."""
    return OLD_NAMES.get(type, type)


# Each new name → its old one, for webhooks subscribed under the old name.
TOPIC_ALIASES = {new: (old,) for old, new in OLD_NAMES.items()}
