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


class SessionRequiredError(ValueRankError):
    """Only a signed-in browser session may do this: the request is well formed, its
    credential (an API token) is not allowed to, hence 403 rather than bad input."""

    code = "SESSION_REQUIRED"
    http_status = 403
