"""Who a credential stands for, as the authentication layer receives it."""

from __future__ import annotations

from dataclasses import dataclass

from valuerank.accounts.roles import Role


@dataclass(frozen=True)
class Identity:
    """A user acting in one organisation with the role they hold there now.

    `token_id` is the API token used (also for a session opened from one); `session_id` and
    `csrf_token` are set for browser sessions.
    """

    org_id: str
    user_id: str
    role: Role
    token_id: str | None = None
    session_id: str | None = None
    csrf_token: str | None = None

    def __repr__(self) -> str:  # never print the CSRF token
        return (
            f"Identity(org_id={self.org_id!r}, user_id={self.user_id!r}, role={self.role!r}, "
            f"token_id={self.token_id!r}, session_id={self.session_id!r})"
        )
