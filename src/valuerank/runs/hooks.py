"""What the runs package tells the queue about a run's partition (`RUN_HOOKS`), given
explicitly to whatever runs the queue for ValueRank: the workers
(`valuerank.cli.worker_cmd.build_worker`, `valuerank.pipeline.handlers`), the app
(`valuerank.api.app.create_app`) and the CLI (`valuerank.cli.common.run`).

- a run's partition ends with `run_complete` (its status and probe counts), not
  `partition_complete` (`valuerank.runs.events.run_completion`);
- webhooks get a step's job events as `job_*` and a probe's progress counting probes
  (`valuerank.runs.events.publish_run_events`);
- a webhook subscribed to an old generic name (`partition_complete`, …) gets the run's event
  under its new one (`valuerank.runs.event_names.TOPIC_ALIASES`);
- pruned jobs of a run leave their counts and failures on the run
  (`valuerank.runs.pruned.keep_pruned_jobs`);
- an open run whose jobs have all ended gets its finalize job if it has none
  (`valuerank.runs.finalizing.finalize_owed`).
"""

from __future__ import annotations

from valuerank.queue.hooks import QueueHooks
from valuerank.runs.event_names import TOPIC_ALIASES
from valuerank.runs.events import publish_run_events, run_completion
from valuerank.runs.finalizing import finalize_owed
from valuerank.runs.pruned import keep_pruned_jobs

RUN_HOOKS = QueueHooks(
    completion_namers=(run_completion,),
    publishers=(publish_run_events,),
    topic_aliases=TOPIC_ALIASES,
    pruned_observers=(keep_pruned_jobs,),
    keepers=(finalize_owed,),
)
