"""Job kinds as typed tasks, in the spirit of procrastinate's `@app.task`.

A `JobKind` names a kind of job and the type of its payload (a pydantic model, a dataclass,
or a union of them): `spec` and `enqueue` write a typed payload as JSON, `payload(job)` reads
it back, and a payload that does not fit is `Permanent` (no retry can fix it). A kind may also
be known by other names (`aliases`, e.g. the seed's `probe:scenario`): accepted wherever a kind
is named, stored under its own name.

A `TaskRegistry` pairs kinds with their handlers, each added explicitly where the registry is
built (never as a side effect of importing a handler's module), and installs them on a worker
with the context the handlers need. The queue still knows nothing of what the kinds mean.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Self, TypedDict, TypeVar, Unpack

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.queue.enqueue import (
    Enqueued,
    JobSpec,
    PriorityName,
    enqueue,
)
from valuerank.queue.errors import Permanent
from valuerank.queue.job import Job

if TYPE_CHECKING:
    from valuerank.queue.worker import Worker


class JobOptions(TypedDict, total=False):
    """`JobSpec`'s fields other than the kind, organisation and payload."""

    partition: str | None
    item_key: str | None
    priority: PriorityName | str | int
    run_at: datetime | None
    delay_seconds: float | None
    max_attempts: int
    provider: str | None
    model: str | None


P = TypeVar("P")
C = TypeVar("C")

Handler = Callable[[C, Job], Coroutine[Any, Any, Any]]
"""`(context, job)` → the job's result (see `Worker`)."""


class TaskPayload(BaseModel):
    """A base for payload models: immutable, unknown keys ignored (a payload written by a
    newer or older version still reads), numbers read as text where text is expected (as the
    hand-written parsers did)."""

    model_config = ConfigDict(frozen=True, extra="ignore", coerce_numbers_to_str=True)

    @classmethod
    def from_payload(cls, payload: Any) -> Self:
        """The payload a job stores, read; `Permanent` when it does not fit."""
        try:
            return cls.model_validate(payload)
        except ValidationError as exc:
            raise Permanent(malformed(cls.__name__, exc)) from None

    def to_payload(self) -> dict[str, Any]:
        """The JSON object a job stores (absent optional fields left out)."""
        return self.model_dump(mode="json", exclude_none=True)


def malformed(what: str, exc: ValidationError) -> str:
    """What is wrong with a payload, in one line."""
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'payload'}: {e['msg']}" for e in exc.errors()
    )
    return f"malformed {what} payload: {problems}"


class JobKind(Generic[P]):
    """A kind of job and its payload's type."""

    def __init__(self, name: str, payload: Any, *, aliases: Iterable[str] = ()) -> None:
        self.name = name
        self.payload_type = payload
        self.aliases = tuple(aliases)

    def __repr__(self) -> str:
        return f"JobKind({self.name!r})"

    @functools.cached_property
    def _adapter(self) -> TypeAdapter[P]:
        # Built on first use: a process that never touches a kind pays nothing for it.
        return TypeAdapter(self.payload_type)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def to_payload(self, value: P) -> dict[str, Any]:
        """The JSON object stored in the job's row (absent optional fields left out)."""
        dumped = self._adapter.dump_python(value, mode="json", exclude_none=True)
        if not isinstance(dumped, dict):
            raise TypeError(f"a {self.name} payload must be an object, not {dumped!r}")
        return dumped

    def from_payload(self, raw: Any) -> P:
        """The typed payload of a stored one; `Permanent` when it does not fit."""
        try:
            return self._adapter.validate_python(raw)
        except ValidationError as exc:
            raise Permanent(malformed(self.name, exc)) from None

    def payload(self, job: Job) -> P:
        return self.from_payload(job.payload)

    def spec(self, payload: P, *, org_id: str, **options: Unpack[JobOptions]) -> JobSpec:
        """The job to enqueue (see `JobSpec`, whose defaults `options` keep) with this kind
        and `payload`."""
        return JobSpec(kind=self.name, org_id=org_id, payload=self.to_payload(payload), **options)

    async def enqueue(
        self, conn: AsyncConnection, payload: P, *, org_id: str, **options: Unpack[JobOptions]
    ) -> Enqueued:
        """Enqueue one job of this kind (idempotent by `item_key`, see `enqueue`)."""
        return await enqueue(conn, self.spec(payload, org_id=org_id, **options))


def kind_names(kinds: Iterable[JobKind[Any]]) -> dict[str, str]:
    """Every name of `kinds` (own names and aliases) → the kind's own name."""
    names: dict[str, str] = {}
    for kind in kinds:
        for name in kind.names:
            if names.setdefault(name, kind.name) != kind.name:
                raise ValueError(f"job kind name {name!r} is taken by {names[name]!r}")
    return names


@dataclass(frozen=True)
class Task(Generic[C]):
    """A kind and its handler, which takes the context the registry is installed with."""

    kind: JobKind[Any]
    handler: Handler[C]


class TaskRegistry(Generic[C]):
    """The job kinds an application runs, each with its handler."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task[C]] = {}
        self._names: dict[str, str] = {}

    def add(self, kind: JobKind[Any], handler: Handler[C]) -> None:
        """Run jobs of `kind` with `handler`; every name of it must be new to the registry."""
        if kind.name in self._tasks:
            raise ValueError(f"job kind {kind.name!r} has a handler already")
        self._names = kind_names([*self.kinds, kind])
        self._tasks[kind.name] = Task(kind, handler)

    def task(self, kind: JobKind[Any]) -> Callable[[Handler[C]], Handler[C]]:
        """Decorator form of `add`."""

        def decorate(
            handler: Handler[C],
        ) -> Handler[C]:
            self.add(kind, handler)
            return handler

        return decorate

    @property
    def kinds(self) -> list[JobKind[Any]]:
        return [task.kind for task in self._tasks.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def resolve(self, name: str) -> str:
        """The own name of a kind given under any of its names (unknown names as given)."""
        name = name.strip()
        return self._names.get(name, name)

    def get(self, name: str) -> Task[C]:
        return self._tasks[self.resolve(name)]

    def install(self, worker: Worker, ctx: C) -> None:
        """Teach `worker` every kind, its handler bound to `ctx`."""
        for task in self._tasks.values():
            worker.register(task.kind.name, functools.partial(task.handler, ctx))
