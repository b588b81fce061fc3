"""Roles a user holds in one organisation, weakest first: each role may do what the weaker
ones may (a member also reads, an admin also writes)."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    VIEWER = "viewer"  # reads everything of the organisation
    MEMBER = "member"  # also creates and steers definitions, runs, analyses
    ADMIN = "admin"  # also manages users, tokens, credentials, the queue and the system

    @property
    def rank(self) -> int:
        return _RANK[self]

    def allows(self, needed: Role) -> bool:
        """Whether holding this role is enough for something that needs `needed`."""
        return self.rank >= needed.rank


_RANK = {Role.VIEWER: 0, Role.MEMBER: 1, Role.ADMIN: 2}
