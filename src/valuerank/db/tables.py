"""Table definitions (SQLAlchemy Core). Alembic migrations are generated from this metadata.

Every table holding tenant data has `org_id`; services scope every query by it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    func,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB

# Stable constraint names, so migrations can alter them on both dialects.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

JSONDocument = JSON().with_variant(JSONB(), "postgresql")
ID_LENGTH = 36  # uuid4 text


def _id() -> Column[str]:
    return Column("id", String(ID_LENGTH), primary_key=True)


def _created_at() -> Column[datetime]:
    return Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now())


def _ts(name: str, *, nullable: bool = True) -> Column[datetime]:
    return Column(name, DateTime(timezone=True), nullable=nullable)


def _org_id() -> Column[str]:
    return Column(
        "org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
    )


def _user_id() -> Column[str]:
    return Column(
        "user_id", String(ID_LENGTH), ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )


orgs = Table(
    "orgs",
    metadata,
    _id(),
    Column("slug", String(64), nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    _created_at(),
)

# A person (or a script's identity). `email` is stored lower-case; `password_hash` is an
# argon2id hash, NULL for users who only use API tokens.
users = Table(
    "users",
    metadata,
    _id(),
    Column("email", String(320), nullable=False, unique=True),
    Column("name", String(200), nullable=False, server_default=""),
    _created_at(),
    Column("password_hash", Text, nullable=True),
    _ts("last_login_at"),
)

memberships = Table(
    "memberships",
    metadata,
    _org_id(),
    _user_id(),
    Column("role", String(16), nullable=False),  # admin | member | viewer
    _created_at(),
    PrimaryKeyConstraint("org_id", "user_id"),
)

# An existing account asked to join an organisation: it becomes a membership only when that
# user accepts (an admin cannot pull someone else's account in). Pending ones only: accepting
# or declining deletes the row.
invitations = Table(
    "invitations",
    metadata,
    _id(),
    _org_id(),
    _user_id(),
    Column("role", String(16), nullable=False),  # admin | member | viewer
    _created_at(),
    UniqueConstraint("org_id", "user_id"),
    Index("ix_invitations_user_id", "user_id"),
)


# API tokens: a token acts as its user in one organisation, with the role the user holds there
# now. Only the SHA-256 of the token is stored (the token is shown once); `display_prefix` is
# its first characters, so people can tell tokens apart.
api_tokens = Table(
    "api_tokens",
    metadata,
    _id(),
    _org_id(),
    _user_id(),
    Column("name", String(100), nullable=False, server_default=""),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("display_prefix", String(16), nullable=False),
    _created_at(),
    _ts("last_used_at"),
    _ts("expires_at"),
    _ts("revoked_at"),
    Index("ix_api_tokens_org_id_user_id", "org_id", "user_id"),
)

# Browser sessions: the cookie holds a random secret, the row its SHA-256 and the CSRF token
# the page echoes in X-CSRF-Token. `org_id` is the organisation the session acts in (a user
# may switch); `token_id` is set for sessions opened from an API token (`/?token=`), which
# end with it.
sessions = Table(
    "sessions",
    metadata,
    _id(),
    _org_id(),
    _user_id(),
    Column(
        "token_id",
        String(ID_LENGTH),
        ForeignKey("api_tokens.id", ondelete="CASCADE"),
        nullable=True,
    ),
    Column("secret_hash", String(64), nullable=False, unique=True),
    Column("csrf_token", String(64), nullable=False),
    _created_at(),
    _ts("expires_at", nullable=False),
    _ts("revoked_at"),
    Index("ix_sessions_user_id", "user_id"),
    Index("ix_sessions_token_id", "token_id"),
)


def _versioned_document_table(name: str) -> Table:
    """Definitions and rubrics are both versioned like Git: a DAG where a fork has one parent.

    `root_id` names the tree a version belongs to (the root points at itself) so version
    labels can be unique per tree; `content_hash` is the sha256 of the canonical content.
    """
    return Table(
        name,
        metadata,
        _id(),
        _org_id(),
        Column(
            "parent_id",
            String(ID_LENGTH),
            ForeignKey(f"{name}.id", ondelete="RESTRICT"),
            nullable=True,
        ),
        Column("root_id", String(ID_LENGTH), nullable=False),
        Column("name", String(300), nullable=False),
        Column("version_label", String(100), nullable=False),
        Column("content", JSONDocument, nullable=False),
        Column("content_hash", String(64), nullable=False),
        Column("source_file", Text, nullable=True),
        Column("created_by", String(ID_LENGTH), nullable=True),
        _created_at(),
        UniqueConstraint("root_id", "version_label"),
        Index(f"ix_{name}_org_id_name", "org_id", "name"),
        Index(f"ix_{name}_parent_id", "parent_id"),
    )


definitions = _versioned_document_table("definitions")
rubrics = _versioned_document_table("rubrics")

# --- The evaluation pipeline (runs/, pipeline/, exchange/) ---------------------------------

# A run sends a definition version's scenarios to models. `config` holds what was asked (models,
# sampling, temperature, follow-ups, judges); `status` moves only through runs/states.py.
runs = Table(
    "runs",
    metadata,
    _id(),
    _org_id(),
    Column(
        "definition_id",
        String(ID_LENGTH),
        ForeignKey("definitions.id", ondelete="RESTRICT"),
        nullable=True,  # an imported CLI run may come without its definition
    ),
    Column("status", String(32), nullable=False, server_default="pending"),
    Column("config", JSONDocument, nullable=False, server_default="{}"),
    _created_at(),
    Column("name", String(300), nullable=False, server_default=""),
    # The CLI's run id (`2025-11-16.10-29`): kept on import, written on export.
    Column("cli_run_id", String(100), nullable=False, server_default=""),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("rubric_id", String(ID_LENGTH), ForeignKey("rubrics.id", ondelete="SET NULL")),
    Column("summary", Text, nullable=True),
    Column("error", Text, nullable=True),
    # Where the run came from: "created" here, or "imported" from CLI files.
    Column("origin", String(16), nullable=False, server_default="created"),
    Column("synthetic", Boolean, nullable=False, server_default=false()),
    _ts("started_at"),
    _ts("finished_at"),
    # The run's jobs maintenance pruned, per kind and status ({"probe": {"failed": 2}, …}):
    # its progress is the live jobs plus these (runs/pruned.py).
    Column("pruned_jobs", JSONDocument, nullable=False, server_default="{}"),
    # Bumped in the same transaction as every write that changes what the run's analysis
    # reads (runs/records.bump_inputs): a stored analysis of the same version is current
    # without reading the transcripts (findings/analyses.py).
    Column("inputs_version", Integer, nullable=False, server_default="0"),
    Index("ix_runs_org_id_definition_id", "org_id", "definition_id"),
    Index("ix_runs_org_id_created_at", "org_id", "created_at"),
)

# The scenarios a run uses, frozen when the run is created or expanded (so a later sampling
# change never alters what a run measured). `position` is the sampling rank.
run_scenarios = Table(
    "run_scenarios",
    metadata,
    _org_id(),
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("scenario_id", String(300), nullable=False),
    Column("position", Integer, nullable=False),
    Column("content", JSONDocument, nullable=False),
    Column("dimension_scores", JSONDocument, nullable=False, server_default="{}"),
    PrimaryKeyConstraint("run_id", "scenario_id"),
)

# One transcript per (run, scenario, model, sample): the unique key is what makes a re-executed
# probe job unable to write a second one. `content` is the CLI markdown, verbatim.
transcripts = Table(
    "transcripts",
    metadata,
    _id(),
    _org_id(),
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("scenario_id", String(300), nullable=False),
    Column("model", String(300), nullable=False),
    Column("sample_index", Integer, nullable=False, server_default="0"),
    Column("content", Text, nullable=False),
    Column("turns", JSONDocument, nullable=False),
    Column("input_tokens", Integer, nullable=False, server_default="0"),
    Column("output_tokens", Integer, nullable=False, server_default="0"),
    Column("latency_ms", Float, nullable=False, server_default="0"),
    Column("cost_usd", Float, nullable=True),
    Column("finish_reason", String(64), nullable=True),
    Column("decision_code", Integer, nullable=True),
    Column("decision_reason", String(200), nullable=True),
    Column("rationale", Text, nullable=True),
    # Consensus of the judges (score, level, disagreement, agreed decision), when judged.
    Column("consensus", JSONDocument, nullable=True),
    Column("synthetic", Boolean, nullable=False, server_default=false()),
    Column("cached", Boolean, nullable=False, server_default=false()),
    # `content` folded for search, written with it (runs/searchable.py): both databases then
    # find "café" in "CAFÉ" by comparing exactly.
    Column("search_text", Text, nullable=False, server_default=""),
    _created_at(),
    UniqueConstraint("run_id", "scenario_id", "model", "sample_index"),
    # The transcript list's newest/oldest-first pages, their neighbours and counts, of the
    # organisation and of one run (runs/transcript_order.py); a run's transcripts are written
    # together, so walking the organisation's by time to find one run's would read the rest.
    Index("ix_transcripts_org_id_created_at_id", "org_id", "created_at", "id"),
    Index("ix_transcripts_org_id_run_id_created_at_id", "org_id", "run_id", "created_at", "id"),
)

# One judge model's reading of one transcript against the values rubric.
judgments = Table(
    "judgments",
    metadata,
    _id(),
    _org_id(),
    Column(
        "transcript_id",
        String(ID_LENGTH),
        ForeignKey("transcripts.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("judge_model", String(300), nullable=False),
    Column("decision", Integer, nullable=True),
    Column("prioritized_values", JSONDocument, nullable=False),
    Column("deprioritized_values", JSONDocument, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("rationale", Text, nullable=False, server_default=""),
    Column("input_tokens", Integer, nullable=False, server_default="0"),
    Column("output_tokens", Integer, nullable=False, server_default="0"),
    Column("cost_usd", Float, nullable=True),
    _created_at(),
    UniqueConstraint("transcript_id", "judge_model"),
)

# A person's reading of a transcript (the values it prioritises and deprioritises, from the
# run's rubric): beside the judges' `judgments`, not among them, so nothing that counts or
# combines judge models (consensus, tallies, costs, exports, re-judging) sees a person.
human_readings = Table(
    "human_readings",
    metadata,
    _id(),
    _org_id(),
    Column(
        "transcript_id",
        String(ID_LENGTH),
        ForeignKey("transcripts.id", ondelete="CASCADE"),
        nullable=False,
    ),
    _user_id(),
    Column("prioritized_values", JSONDocument, nullable=False),
    Column("deprioritized_values", JSONDocument, nullable=False),
    Column("note", Text, nullable=False, server_default=""),
    _created_at(),
    UniqueConstraint("transcript_id", "user_id"),
    Index("ix_human_readings_org_id_user_id", "org_id", "user_id"),
)

# What a run's status and results read instead of its transcripts: per (run, model, decision
# code; 0 when there is none) how many transcripts, refusals and synthetic ones, the sum and
# count of the known costs, and the judges' costs. The statement that writes a transcript or
# a judgment moves its row (runs/records.py), so a report reads a few rows per model at any
# run size.
run_tallies = Table(
    "run_tallies",
    metadata,
    _org_id(),
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("model", String(300), nullable=False),
    Column("decision_code", Integer, nullable=False),
    Column("transcripts", Integer, nullable=False, server_default="0"),
    Column("refusals", Integer, nullable=False, server_default="0"),
    Column("synthetic", Integer, nullable=False, server_default="0"),
    Column("cost_usd", Float, nullable=False, server_default="0"),
    Column("costs_known", Integer, nullable=False, server_default="0"),
    Column("judge_cost_usd", Float, nullable=False, server_default="0"),
    PrimaryKeyConstraint("run_id", "model", "decision_code"),
)

# Responses kept for `--reuse-cache`, keyed by a canonical hash of the whole request.
response_cache = Table(
    "response_cache",
    metadata,
    _org_id(),
    Column("key", String(64), nullable=False),
    Column("model", String(300), nullable=False),
    Column("completion", JSONDocument, nullable=False),
    _created_at(),
    PrimaryKeyConstraint("org_id", "key"),
    Index("ix_response_cache_created_at", "created_at"),  # maintenance prunes the oldest
)

# The model registry: global, editable; prices are USD per million tokens.
models = Table(
    "models",
    metadata,
    _id(),
    Column("provider", String(100), nullable=False),
    Column("name", String(200), nullable=False),
    Column("display_name", String(300), nullable=False, server_default=""),
    Column("version", String(100), nullable=False, server_default=""),
    Column("category", String(64), nullable=False, server_default=""),
    Column("capabilities", JSONDocument, nullable=False),
    Column("weight", Float, nullable=False, server_default="1"),
    Column("active", Boolean, nullable=False, server_default=true()),
    Column("input_price_per_mtok", Float, nullable=True),
    Column("output_price_per_mtok", Float, nullable=True),
    _created_at(),
    UniqueConstraint("provider", "name"),
)

# API keys stored per organisation, encrypted (Fernet, key from VALUERANK_SECRET_KEY).
provider_credentials = Table(
    "provider_credentials",
    metadata,
    _id(),
    _org_id(),
    Column("provider", String(100), nullable=False),
    Column("ciphertext", Text, nullable=False),
    # The last four characters, so people can tell keys apart without seeing them.
    Column("hint", String(8), nullable=False, server_default=""),
    _created_at(),
    UniqueConstraint("org_id", "provider"),
)


# What an organisation's new runs get when they name none (org_defaults.py): judges and a
# summary model. One row per organisation, absent until one is set.
org_defaults = Table(
    "org_defaults",
    metadata,
    Column(
        "org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True
    ),
    Column("judge_models", JSONDocument, nullable=False, server_default="[]"),
    Column("summary_model", String(300), nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# --- The job queue (valuerank.queue) ------------------------------------------------------
# Generic: a job is (kind, payload) in a partition (e.g. a run id); see queue/ for the SQL.
# Rows of global scope (global/provider controls and caps) have org_id NULL.

QUEUED_WHERE = text("status = 'queued'")
RUNNING_WHERE = text("status = 'running'")


jobs = Table(
    "jobs",
    metadata,
    _id(),
    _org_id(),
    Column("partition", String(200), nullable=False),
    Column("item_key", String(300), nullable=False),
    Column("kind", String(100), nullable=False),
    Column("payload", JSONDocument, nullable=False),
    Column("status", String(16), nullable=False, server_default="queued"),
    Column("priority", Integer, nullable=False, server_default="0"),
    Column("run_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("max_attempts", Integer, nullable=False, server_default="3"),
    Column("lease_token", String(ID_LENGTH), nullable=True),
    _ts("lease_expires_at"),
    Column("locked_by", String(200), nullable=True),
    Column("cancel_requested", Boolean, nullable=False, server_default=false()),
    Column("provider", String(100), nullable=True),
    Column("model", String(200), nullable=True),
    # The concurrency slots this attempt holds, so release frees exactly what claim took.
    Column("slot_keys", JSONDocument, nullable=True),
    Column("result", JSONDocument, nullable=True),
    Column("last_error", Text, nullable=True),
    _created_at(),
    _ts("started_at"),
    _ts("finished_at"),
    UniqueConstraint("partition", "item_key"),
    Index(
        "ix_jobs_running",
        "org_id",
        "partition",
        postgresql_where=RUNNING_WHERE,
        sqlite_where=RUNNING_WHERE,
    ),
)

# The claim's scan: queued jobs, highest priority first, then oldest.
Index(
    "ix_jobs_queued",
    jobs.c.priority.desc(),
    jobs.c.run_at,
    postgresql_where=QUEUED_WHERE,
    sqlite_where=QUEUED_WHERE,
)

job_errors = Table(
    "job_errors",
    metadata,
    _id(),
    Column("job_id", String(ID_LENGTH), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    _org_id(),
    Column("attempt", Integer, nullable=False),
    Column("category", String(32), nullable=False),  # transient | rate_limited | permanent | …
    Column("error_class", String(200), nullable=False),
    Column("message", Text, nullable=False),
    _created_at(),
    Index("ix_job_errors_job_id", "job_id"),
)

# The failed jobs of runs that maintenance pruned, as the run's failure listing shows them
# (runs/pruned.py): a run's failures outlive the queue's retention of its jobs.
pruned_failures = Table(
    "pruned_failures",
    metadata,
    Column("job_id", String(ID_LENGTH), primary_key=True),
    _org_id(),
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(100), nullable=False),
    Column("scenario_id", String(300), nullable=True),
    Column("model", String(300), nullable=True),
    Column("provider", String(100), nullable=True),
    Column("transcript_id", String(300), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("error", Text, nullable=True),
    _ts("created_at", nullable=False),  # the job's, for the listing's (created_at, id) order
    _ts("finished_at"),
    Index("ix_pruned_failures_run_id_created_at", "run_id", "created_at"),
)

queue_slots = Table(
    "queue_slots",
    metadata,
    Column("key", String(400), primary_key=True),
    Column("scope", String(16), nullable=False),  # global | org | provider | model
    Column("org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), nullable=True),
    Column("provider", String(100), nullable=True),
    Column("model", String(200), nullable=True),
    Column("in_use", Integer, nullable=False, server_default="0"),
    Column("max", Integer, nullable=False),
    # An organisation cap made by the workers' default (VALUERANK_WORKER_ORG_CONCURRENCY):
    # follows that default (changed, or lifted by 0); a cap set for the organisation is not.
    Column("is_default", Boolean, nullable=False, server_default=false()),
)

queue_controls = Table(
    "queue_controls",
    metadata,
    Column("scope", String(16), nullable=False),  # global | partition | provider
    Column("key", String(200), nullable=False),
    Column("org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), nullable=True),
    Column("paused", Boolean, nullable=False, server_default=false()),
    Column("cancel_requested", Boolean, nullable=False, server_default=false()),
    # Last event sequence number of a partition; bumping it serialises that partition's events.
    Column("last_seq", Integer, nullable=False, server_default="0"),
    _ts("updated_at"),
    PrimaryKeyConstraint("scope", "key"),
)

events = Table(
    "events",
    metadata,
    Column("partition", String(200), nullable=False),
    Column("seq", Integer, nullable=False),
    _org_id(),
    Column("type", String(40), nullable=False),
    Column("data", JSONDocument, nullable=False),
    _created_at(),
    PrimaryKeyConstraint("partition", "seq"),
    # Maintenance prunes events by age (VALUERANK_WORKER_EVENT_RETENTION_DAYS), oldest first.
    Index("ix_events_created_at", "created_at"),
)

# Token buckets per (provider, model, credential), shared by every worker through the
# database: requests per minute and tokens per minute, a minimum spacing between requests,
# a block until the provider's announced reset, and an adaptive concurrency limit.
rate_buckets = Table(
    "rate_buckets",
    metadata,
    Column("key", String(400), primary_key=True),
    Column("org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), nullable=True),
    Column("provider", String(100), nullable=False),
    Column("model", String(200), nullable=False, server_default=""),
    Column("credential", String(100), nullable=False, server_default=""),
    Column("rpm_limit", Float, nullable=True),
    Column("tpm_limit", Float, nullable=True),
    Column("request_tokens", Float, nullable=False, server_default="0"),
    Column("token_tokens", Float, nullable=False, server_default="0"),
    _ts("refilled_at"),
    Column("min_interval_ms", Integer, nullable=False, server_default="0"),
    _ts("last_request_at"),
    _ts("blocked_until"),
    Column("concurrency_limit", Integer, nullable=True),
    Column("concurrency_floor", Integer, nullable=False, server_default="1"),
    Column("concurrency_ceiling", Integer, nullable=True),
    Column("clean_streak", Integer, nullable=False, server_default="0"),
    Column("rate_limited_total", Integer, nullable=False, server_default="0"),
    _ts("updated_at"),
)

webhooks = Table(
    "webhooks",
    metadata,
    _id(),
    _org_id(),
    Column("url", Text, nullable=False),
    # Fernet token of the signing secret (VALUERANK_SECRET_KEY): never the plaintext.
    Column("secret_encrypted", Text, nullable=True),
    Column("event_types", JSONDocument, nullable=False),  # list of event types, [] = all
    Column("active", Boolean, nullable=False, server_default=true()),
    _created_at(),
    # Registered over HTTP where private targets are not allowed: every delivery resolves the
    # host again and goes only to a public address (queue/webhook_targets.py).
    Column("public_only", Boolean, nullable=False, server_default=false()),
)

# Notifications written in the same transaction as the state change that causes them.
outbox = Table(
    "outbox",
    metadata,
    _id(),
    _org_id(),
    Column(
        "webhook_id",
        String(ID_LENGTH),
        ForeignKey("webhooks.id", ondelete="CASCADE"),
        nullable=True,
    ),
    Column("topic", String(100), nullable=False),
    Column("payload", JSONDocument, nullable=False),
    Column(
        "status", String(16), nullable=False, server_default="pending"
    ),  # pending|delivered|dead
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("max_attempts", Integer, nullable=False, server_default="8"),
    Column("next_attempt_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("lease_token", String(ID_LENGTH), nullable=True),
    _ts("lease_expires_at"),
    Column("last_error", Text, nullable=True),
    Column("last_status_code", Integer, nullable=True),
    _created_at(),
    _ts("delivered_at"),
    Index("ix_outbox_status_next_attempt_at", "status", "next_attempt_at"),
)

maintenance_runs = Table(
    "maintenance_runs",
    metadata,
    _id(),
    Column("org_id", String(ID_LENGTH), ForeignKey("orgs.id", ondelete="CASCADE"), nullable=True),
    Column("worker_id", String(200), nullable=True),
    Column("status", String(16), nullable=False),  # succeeded | failed
    Column("actions", JSONDocument, nullable=False),  # {"pruned_jobs": n, "reaped": {...}, …}
    Column("error", Text, nullable=True),
    _ts("started_at", nullable=False),
    _ts("finished_at", nullable=False),
    Column("duration_ms", Integer, nullable=False),
    # What the pass did (`full`: the scheduled set; or one operation run alone, e.g.
    # `reap_stale_runs`) and who asked (`worker`, `cli`, `api`, `schedule`). Migration 0010.
    Column("kind", String(32), nullable=False, server_default="full"),
    Column("trigger", String(16), nullable=False, server_default="worker"),
    Index("ix_maintenance_runs_started_at_id", "started_at", "id"),
)

# Maintenance anomalies (a missed schedule, a failed pass) announced to an organisation's
# webhooks through the outbox: one row per (organisation, anomaly), so announcing is
# idempotent; `outbox_ids` are the notifications it wrote (their delivery status is read
# from the outbox). Migration 0010.
maintenance_alerts = Table(
    "maintenance_alerts",
    metadata,
    _id(),
    _org_id(),
    Column("anomaly_key", String(200), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("detail", JSONDocument, nullable=False),
    Column("outbox_ids", JSONDocument, nullable=False),
    _created_at(),
    UniqueConstraint("org_id", "anomaly_key"),
)

# --- Queue counters (valuerank.queue) -----------------------------------------------------
# How many jobs of a partition are in each status, kept on the partition's `queue_controls`
# row (the row whose lock already serialises the partition's events) by the same statement
# or transaction that moves the jobs: a job event's progress is read from here in O(1)
# instead of counted over the partition. Zero on global and provider rows.
for _status in ("queued", "running", "succeeded", "failed", "cancelled"):
    queue_controls.append_column(
        Column(f"jobs_{_status}", Integer, nullable=False, server_default="0")
    )
del _status

# The PostgreSQL claim walks the queued jobs partition by partition in claim order (and skips
# from one partition with queued jobs to the next) instead of sorting every queued job.
Index(
    "ix_jobs_queued_partition",
    jobs.c.partition,
    jobs.c.priority.desc(),
    jobs.c.run_at,
    jobs.c.created_at,
    jobs.c.id,
    postgresql_where=QUEUED_WHERE,
    sqlite_where=QUEUED_WHERE,
)

# A run's jobs of one kind and status (probe, finalize, judge, summarize) without reading its
# other jobs: bounded checks of the active probes at any run size, and the progress of a run
# as its partition's counters minus its few jobs of other kinds (runs/progress.py).
Index("ix_jobs_partition_kind_status", jobs.c.partition, jobs.c.kind, jobs.c.status)

# --- Multi-model validation (valuerank.validation) ----------------------------------------
# Tasks carry Response-Awareness tags (assumptions an assistant made, `#TYPE: text`); models
# validate a tag (validated / partial / rejected, confidence 0–100). Task and validation ids
# are integers, as the validation API's clients expect; tag ids are strings chosen per task.

# SQLite makes only an INTEGER PRIMARY KEY an auto-incrementing rowid; PostgreSQL gets BIGINT.
AutoId = BigInteger().with_variant(Integer(), "sqlite")

validation_tasks = Table(
    "validation_tasks",
    metadata,
    Column("id", AutoId, primary_key=True, autoincrement=True),
    _org_id(),
    Column("name", String(300), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    # Bumped by every transaction that changes what the task's consensus reads show (a tag
    # added, a validation recorded): the cache of those reads is keyed by it, so every API
    # process sees a change at once, and the row's lock serialises a task's writes.
    Column("version", Integer, nullable=False, server_default="0"),
    _created_at(),
    Index("ix_validation_tasks_org_id_id", "org_id", "id"),
)

ra_tags = Table(
    "ra_tags",
    metadata,
    Column(
        "task_id",
        AutoId,
        ForeignKey("validation_tasks.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("id", String(100), nullable=False),
    _org_id(),
    Column("text", Text, nullable=False),
    Column("position", Integer, nullable=False),  # 1, 2, 3… in the order tags were added
    _created_at(),
    PrimaryKeyConstraint("task_id", "id"),
)

validations = Table(
    "validations",
    metadata,
    Column("id", AutoId, primary_key=True, autoincrement=True),
    _org_id(),
    Column("task_id", AutoId, nullable=False),
    Column("ra_tag_id", String(100), nullable=False),
    Column("validator_id", String(300), nullable=False),
    # The validator's registry entry (weight, name, version, category).
    Column("model_id", String(ID_LENGTH), ForeignKey("models.id", ondelete="SET NULL")),
    Column("outcome", String(16), nullable=False),
    Column("confidence", Float, nullable=False),
    Column("notes", Text, nullable=False, server_default=""),
    # Only a model's latest validation of a tag is current (counts in the consensus); the
    # earlier ones are kept as history.
    Column("is_current", Boolean, nullable=False, server_default=true()),
    # How it was recorded: "api" (directly) or "job" (a model asked through the queue).
    Column("source", String(16), nullable=False, server_default="api"),
    # The `validate` job's item key: a job executed twice records one validation.
    Column("request_key", String(300), nullable=True, unique=True),
    Column("validated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    ForeignKeyConstraint(
        ["task_id", "ra_tag_id"], ["ra_tags.task_id", "ra_tags.id"], ondelete="CASCADE"
    ),
    CheckConstraint("outcome IN ('validated', 'partial', 'rejected')", name="outcome"),
    CheckConstraint("confidence >= 0 AND confidence <= 100", name="confidence"),
)

# The current validations of a tag (what its consensus reads), and at most one per model.
CURRENT_WHERE = text("is_current")
Index(
    "ix_validations_current",
    validations.c.task_id,
    validations.c.ra_tag_id,
    validations.c.validator_id,
    unique=True,
    postgresql_where=CURRENT_WHERE,
    sqlite_where=CURRENT_WHERE,
)

# --- Analysis (valuerank.findings) ---------------------------------------------------------
# A run's analyses, one row per (run, kind): `basic` or `deep`. The row is served while the
# hash of the run's inputs (transcripts, judgments, scenarios, sampling) and the analysis code
# version match; otherwise it is recomputed and replaced.
analyses = Table(
    "analyses",
    metadata,
    _id(),
    _org_id(),
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(16), nullable=False),  # basic | deep
    Column("input_hash", String(64), nullable=False),
    Column("code_version", String(32), nullable=False),
    # The run's `inputs_version` read before its inputs were (None: stored before 0020).
    Column("inputs_version", Integer, nullable=True),
    Column("result", JSONDocument, nullable=False),
    # The narrative a model wrote about a deep analysis (the `summarize` job), when asked.
    Column("narrative", Text, nullable=True),
    Column("duration_ms", Float, nullable=False, server_default="0"),
    _created_at(),
    UniqueConstraint("run_id", "kind"),
    Index("ix_analyses_org_id_run_id", "org_id", "run_id"),
)

# The figures drawn from a stored analysis row (report/figure_store.py), as inline SVG: kept
# beside it so a new process (`valuerank report`) draws nothing while the analysis is current.
# Stale when the row's `input_hash` or the figures' `version` (the drawing code's) differ.
analysis_figures = Table(
    "analysis_figures",
    metadata,
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("kind", String(16), nullable=False),  # basic | deep, as the analysis drawn from
    _org_id(),
    Column("input_hash", String(64), nullable=False),
    Column("version", String(64), nullable=False),
    Column("svgs", JSONDocument, nullable=False),  # figure name -> <svg>
    _created_at(),
    PrimaryKeyConstraint("run_id", "kind"),
)

# A comparison of two runs (`analyze:compare`): queued, then completed with its result (or
# failed with the reason). `input_hash` covers both runs' inputs and the options.
comparisons = Table(
    "comparisons",
    metadata,
    _id(),
    _org_id(),
    Column(
        "baseline_run_id",
        String(ID_LENGTH),
        ForeignKey("runs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "comparison_run_id",
        String(ID_LENGTH),
        ForeignKey("runs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("status", String(16), nullable=False, server_default="queued"),
    Column("options", JSONDocument, nullable=False),
    Column("input_hash", String(64), nullable=True),
    Column("code_version", String(32), nullable=True),
    Column("result", JSONDocument, nullable=True),
    Column("error", Text, nullable=True),
    _created_at(),
    _ts("finished_at"),
    Index("ix_comparisons_org_id_baseline_run_id", "org_id", "baseline_run_id"),
    Index("ix_comparisons_org_id_comparison_run_id", "org_id", "comparison_run_id"),
)

# An experiment: a hypothesis, a baseline run, and variant runs that each change one thing.
experiments = Table(
    "experiments",
    metadata,
    _id(),
    _org_id(),
    Column("name", String(300), nullable=False),
    Column("hypothesis", Text, nullable=False, server_default=""),
    Column(
        "baseline_run_id",
        String(ID_LENGTH),
        ForeignKey("runs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    _created_at(),
    Index("ix_experiments_org_id_created_at", "org_id", "created_at"),
)

experiment_variants = Table(
    "experiment_variants",
    metadata,
    _org_id(),
    Column(
        "experiment_id",
        String(ID_LENGTH),
        ForeignKey("experiments.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("run_id", String(ID_LENGTH), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("changes", JSONDocument, nullable=False),  # what differs from the baseline's config
    _created_at(),
    PrimaryKeyConstraint("experiment_id", "run_id"),
)
