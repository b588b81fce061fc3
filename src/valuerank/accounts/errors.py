"""Errors of accounts: each says what to do next."""

from __future__ import annotations

from valuerank.errors import ConflictError, ValueRankError


class InvalidCredentialsError(ValueRankError):
    """Wrong email or password (never says which)."""

    code = "INVALID_CREDENTIALS"
    http_status = 401


class MemberExistsError(ConflictError):
    code = "MEMBER_EXISTS"


class LastAdminError(ConflictError):
    """The change would leave an organisation without an admin."""

    code = "LAST_ADMIN"


class NoMembershipError(ValueRankError):
    code = "NO_MEMBERSHIP"
    http_status = 403
