"""Peak memory of the analysis job on a big run: `python -m bench.analysis_memory`.

The scale benchmark's one figure over its 300 MB goal was the worker that ran the basic
analysis of the 100,000-job run (366 MB). Re-running a 100k run to watch that one job takes
an hour, so this benchmark builds such a run directly: a fresh PostgreSQL database, the scale
benchmark's definition (1,000 scenarios) and model shape (10 scripted models, samples per
scenario to reach N), and N transcripts written by the real write path (`insert_transcript`,
a two-turn conversation each; with `--judges 2`, two judges' readings and their consensus,
as a judged run stores them). A new process then does what a worker does for the analysis
job — imports the worker, then the statistics stack the job loads, then `run_analysis` —
and reports its RSS at each step and its peak (`ru_maxrss`). The goal is the scale
benchmark's: a worker stays at or under 300 MB.

    python -m bench.analysis_memory --transcripts 100000 [--judges 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any

from bench.scale import definition_md, fresh_database, shape_for

GOAL_MB = 300.0
BASE_URL = os.environ.get(
    "VALUERANK_BENCH_DATABASE_URL",
    os.environ.get("VALUERANK_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
)
BATCH = 2000
VALUES = ("Harm_Prevention", "Honesty", "Loyalty", "Fairness")
ANSWER = (
    "I weigh the harm to the people involved against what honesty and loyalty ask of me "
    "here. The harm is real but limited, and the friendship matters; still, staying silent "
    "would let it continue. On balance I would help, carefully and openly. Rating: {code}"
)


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- seeding (this process) ------------------------------------------------------------------


async def seed(url: str, transcripts: int, judges: int) -> dict[str, Any]:
    """The run: N transcripts through `insert_transcript`, committed `BATCH` at a time."""
    from valuerank.db import create_database
    from valuerank.db.migrate import upgrade
    from valuerank.definitions.service import import_definition
    from valuerank.orgs import ensure_org

    db = create_database(url)
    try:
        await upgrade(db)
        async with db.transaction() as conn:
            org_id = await ensure_org(conn, "default")
            stored, _ = await import_definition(conn, org_id, definition_md())
        started = time.perf_counter()
        filled = await fill_run(db, org_id, stored.version.id, transcripts, judges)
        return {
            "org_id": org_id,
            **filled,
            "judges": judges,
            "seed_seconds": round(time.perf_counter() - started, 1),
        }
    finally:
        await db.dispose()


async def fill_run(
    db: Any, org_id: str, version_id: str, transcripts: int, judges: int, *, name: str = ""
) -> dict[str, Any]:
    """A run of `version_id` holding N transcripts (the scale shape), with `judges` readings
    and their consensus on each, written by the real write path."""
    from valuerank.consensus.consensus import decision_consensus
    from valuerank.runs.config import RunConfig
    from valuerank.runs.records import TranscriptRecord, insert_transcript
    from valuerank.runs.service import create_run, run_scenario_ids

    shape = shape_for(transcripts)
    judge_models = tuple(f"scripted:centrist?seed={j + 1}" for j in range(judges))
    async with db.transaction() as conn:
        config = RunConfig(
            models=shape.models, samples_per_scenario=shape.samples, sample_percentage=100
        )
        run = (await create_run(conn, org_id, version_id, config, name=name)).run
        scenario_ids = await run_scenario_ids(conn, run.id)
    items = [
        (sid, model, sample)
        for sid in scenario_ids[: shape.scenarios]
        for model in shape.models
        for sample in range(shape.samples)
    ][:transcripts]
    for first in range(0, len(items), BATCH):
        async with db.transaction() as conn:
            for n, (sid, model, sample) in enumerate(items[first : first + BATCH], first):
                record = _record(run.cli_run_id, sid, model, sample, n, judge_models)
                if judge_models:
                    votes = [j.judgement() for j in record.judgments]
                    consensus = decision_consensus(votes).to_dict()
                    record = TranscriptRecord(**{**vars(record), "consensus": consensus})
                await insert_transcript(conn, org_id, run.id, record)
    return {
        "run_id": run.id,
        "transcripts": len(items),
        "models": len(shape.models),
        "scenarios": shape.scenarios,
        "samples": shape.samples,
    }


def _record(
    cli_run_id: str, sid: str, model: str, sample: int, n: int, judges: tuple[str, ...]
) -> Any:
    from valuerank.formats.transcript_md import Transcript, Turn
    from valuerank.runs.records import JudgmentRecord, TranscriptRecord

    code = None if n % 37 == 0 else 1 + (n * 7 + sample) % 5
    answer = "I would rather not choose here." if code is None else ANSWER.format(code=code)
    transcript = Transcript(
        run_id=cli_run_id,
        scenario_id=sid,
        target_model=model,
        subject=sid,
        turns=(
            Turn(1, "scenario", "A friend asks for help. Give me your judgement.", answer),
            Turn(2, "followup", "Why?", "Because the harm outweighs the cost of speaking."),
        ),
    )
    readings = tuple(
        JudgmentRecord(
            judge_model=judge,
            decision=code if code is None or j == 0 else max(1, code - (n % 2)),
            prioritized_values=(VALUES[n % 4],),
            deprioritized_values=(VALUES[(n + 1 + j) % 4],),
            confidence=60.0 + (n + j) % 35,
            rationale="The answer names the harm first and weighs loyalty second.",
        )
        for j, judge in enumerate(judges)
    )
    return TranscriptRecord(
        transcript=transcript,
        model=model,
        sample_index=sample,
        input_tokens=180,
        output_tokens=90,
        latency_ms=0.0,
        decision_code=code,
        decision_reason=None if code is not None else "refusal",
        synthetic=True,
        judgments=readings,
    )


# -- measuring (a new process, as a worker) ---------------------------------------------------


async def measure(url: str, org_id: str, run_id: str) -> dict[str, Any]:
    """What a worker's analysis job costs in memory: RSS after the worker's imports, after the
    statistics stack, and the peak over `run_analysis`."""
    from valuerank.db import create_database

    for loaded_by_the_worker in ("valuerank.cli.worker_cmd", "valuerank.pipeline.handlers"):
        importlib.import_module(loaded_by_the_worker)

    worker_mb = _rss_mb()
    # The job's own imports: a cached answer needs only the first; computing loads the
    # statistics stack (scipy, statsmodels) and the run's loader, imported there lazily.
    from valuerank.findings.analyses import run_analysis

    for computing in ("valuerank.analysis", "valuerank.findings.loading"):
        importlib.import_module(computing)

    stack_mb = _rss_mb()
    db = create_database(url)
    try:
        started = time.perf_counter()
        outcome = await run_analysis(db, org_id, run_id, force=True)
        seconds = time.perf_counter() - started
    finally:
        await db.dispose()
    return {
        "worker_rss_mb": round(worker_mb, 1),
        "with_stack_rss_mb": round(stack_mb, 1),
        "peak_rss_mb": round(_peak_mb(), 1),
        "after_rss_mb": round(_rss_mb(), 1),
        "analysis_seconds": round(seconds, 2),
        "query_ms": round(outcome.timings.query_ms, 1),
        "analysis_ms": round(outcome.timings.analysis_ms, 1),
        "transcripts_analysed": sum(m["sampleSize"] for m in outcome.analysis["perModel"].values()),
    }


def _measure_in_new_process(url: str, seeded: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.analysis_memory", "--measure", url,
         seeded["org_id"], seeded["run_id"]],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transcripts", type=int, default=100_000)
    parser.add_argument("--judges", type=int, default=0, help="judge readings per transcript")
    parser.add_argument("--repeats", type=int, default=2, help="measuring processes")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--measure", nargs=3, metavar=("URL", "ORG", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(asyncio.run(measure(*args.measure))))
        return 0
    with fresh_database(BASE_URL) as url:
        seeded = asyncio.run(seed(url, args.transcripts, args.judges))
        runs = [_measure_in_new_process(url, seeded) for _ in range(args.repeats)]
    peak = max(r["peak_rss_mb"] for r in runs)
    report = {
        "benchmark": "analysis_memory",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "run": seeded,
        "measurements": runs,
        "peak_rss_mb": peak,
        "goal_mb": GOAL_MB,
        "ratio_to_goal": round(peak / GOAL_MB, 3),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for r in runs:
            print(
                f"worker {r['worker_rss_mb']} MB, with the stack {r['with_stack_rss_mb']} MB, "
                f"peak {r['peak_rss_mb']} MB over the analysis of "
                f"{r['transcripts_analysed']:,} transcripts ({r['analysis_seconds']} s)"
            )
        print(f"peak {peak} MB of the {GOAL_MB:.0f} MB goal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
