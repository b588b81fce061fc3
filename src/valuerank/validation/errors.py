"""The validation API's errors, with the codes its clients know (see the seed document)."""

from __future__ import annotations

from valuerank.errors import ConflictError, InvalidInputError, NotFoundError, ValueRankError


class TaskNotFoundError(NotFoundError):
    """An unknown task id, or another organisation's (they answer the same)."""

    code = "TASK_NOT_FOUND"


class RaTagNotFoundError(NotFoundError):
    code = "RA_TAG_NOT_FOUND"


class InvalidTaskIdError(ValueRankError):
    code = "INVALID_TASK_ID"
    http_status = 422


class RaTagExistsError(ConflictError):
    code = "RA_TAG_EXISTS"


class InactiveModelError(InvalidInputError):
    code = "MODEL_INACTIVE"


class ConsensusCalculationError(ValueRankError):
    """Stored validation data the consensus cannot use (e.g. a registry weight edited to a
    negative number behind the registry's back)."""

    code = "CONSENSUS_CALCULATION_ERROR"
    http_status = 500


class CacheError(ValueRankError):
    """The cache could not answer: a client asked for a cached answer only
    (`Cache-Control: only-if-cached`) and none is fresh (HTTP's 504 for that case)."""

    code = "CACHE_ERROR"
    http_status = 504


class ValidationDatabaseError(ValueRankError):
    """The database failed while serving a validation request: retry after a delay."""

    code = "DATABASE_ERROR"
    http_status = 503
