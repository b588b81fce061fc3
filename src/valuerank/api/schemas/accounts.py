"""The organisation and credential lists: one page each, bounded by what they list (the
organisations a user belongs to; one key per provider), so `next_cursor` is always null."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from valuerank.accounts.roles import Role
from valuerank.api.schemas.envelope import Out
from valuerank.credentials.store import CredentialSource


class OrgMembership(Out):
    id: str
    slug: str
    name: str
    created_at: datetime
    members: int | None = Field(default=None, description="When the listing counts them.")
    role: Role


class OrgList(Out):
    orgs: list[OrgMembership]
    count: int
    next_cursor: None = Field(description="Always null: the list is one page.")


class Credential(Out):
    provider: str
    source: CredentialSource = Field(description="stored: this organisation's own key.")
    hint: str = Field(description="The key masked: at most its last four characters.")
    env_var: str | None
    created_at: datetime | None


class CredentialList(Out):
    credentials: list[Credential]
    count: int
    next_cursor: None = Field(description="Always null: the list is one page.")
