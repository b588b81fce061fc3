"""Invitations: how an organisation's admin asks an existing account to join.

An admin adds people by email (`invite`). A new email becomes a user and a member at once, as
before; an email that has an account already gets a pending invitation, which only its user
accepts or declines — an admin cannot pull someone else's account into their organisation,
nor read its details (has it a password, when did it last sign in) before it has joined.
Both cases answer the same, so adding by email tells nothing about who has an account here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.accounts.errors import MemberExistsError
from valuerank.accounts.passwords import check_password_policy
from valuerank.accounts.roles import Role
from valuerank.accounts.users import (
    Membership,
    _clean_name,
    add_member,
    normalize_email,
    parse_role,
)
from valuerank.db.tables import invitations, memberships, orgs, users
from valuerank.errors import NotFoundError
from valuerank.orgs import Org
from valuerank.queue.dialect import iso, upsert


@dataclass(frozen=True)
class Invitation:
    """A pending invitation of `email` to join `org` with `role`."""

    id: str
    org: Org
    email: str
    role: Role
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "org": {"id": self.org.id, "slug": self.org.slug, "name": self.org.name},
            "email": self.email,
            "role": self.role.value,
            "invited_at": iso(self.created_at),
        }


def _invitation(row: Row[Any]) -> Invitation:
    org = Org(row.org_id, row.slug, row.org_name, row.org_created_at)
    return Invitation(row.id, org, row.email, Role(row.role), row.created_at)


def _query() -> Any:
    return (
        select(
            invitations.c.id,
            invitations.c.org_id,
            invitations.c.role,
            invitations.c.created_at,
            users.c.email,
            orgs.c.slug,
            orgs.c.name.label("org_name"),
            orgs.c.created_at.label("org_created_at"),
        )
        .join(users, users.c.id == invitations.c.user_id)
        .join(orgs, orgs.c.id == invitations.c.org_id)
    )


async def invite(
    conn: AsyncConnection,
    org_id: str,
    email: str,
    role: Role | str,
    *,
    name: str = "",
    password: str | None = None,
) -> dict[str, Any]:
    """Add `email` to the organisation: a new user and member if the email is new, else a
    pending invitation (its role updated if one was pending already). What it answers is the
    same either way; a password (policy-checked first, whatever the email) is only set on a
    new user. MEMBER_EXISTS when the email is a member of this organisation already."""
    address = normalize_email(email)
    chosen = parse_role(role)
    display = _clean_name(name)
    if password is not None:
        check_password_policy(password)
    user_id = await conn.scalar(select(users.c.id).where(users.c.email == address))
    if user_id is None:
        await add_member(conn, org_id, address, chosen, name=display, password=password)
    else:
        held = await conn.scalar(
            select(memberships.c.role).where(
                memberships.c.org_id == org_id, memberships.c.user_id == user_id
            )
        )
        if held is not None:  # the admin sees their members anyway: this tells nothing new
            raise MemberExistsError(
                f"{address} is a member already ({held})",
                hint="change the role with `valuerank users set-role` (PATCH /api/users/{id})",
            )
        insert = upsert(conn)
        await conn.execute(
            insert(invitations)
            .values(id=str(uuid.uuid4()), org_id=org_id, user_id=user_id, role=chosen.value)
            .on_conflict_do_update(
                index_elements=["org_id", "user_id"], set_={"role": chosen.value}
            )
        )
    return {"email": address, "role": chosen.value, "invited": True}


async def org_invitations(conn: AsyncConnection, org_id: str) -> list[Invitation]:
    """The organisation's pending invitations, oldest first (emails and roles only)."""
    query = _query().where(invitations.c.org_id == org_id)
    rows = (await conn.execute(query.order_by(invitations.c.created_at, users.c.email))).all()
    return [_invitation(row) for row in rows]


async def my_invitations(conn: AsyncConnection, user_id: str) -> list[Invitation]:
    """A user's pending invitations, oldest first."""
    query = _query().where(invitations.c.user_id == user_id)
    rows = (await conn.execute(query.order_by(invitations.c.created_at, orgs.c.slug))).all()
    return [_invitation(row) for row in rows]


async def _pending(conn: AsyncConnection, invitation_id: str, **scope: str) -> Invitation:
    """The invitation, if it is the user's (`user_id`) or the organisation's (`org_id`);
    anyone else's is NOT_FOUND, like one that does not exist."""
    query = _query().where(invitations.c.id == invitation_id)
    for column, value in scope.items():
        query = query.where(invitations.c[column] == value)
    row = (await conn.execute(query)).first()
    if row is None:
        raise NotFoundError(
            f"no pending invitation {invitation_id!r}",
            hint="GET /api/invitations lists yours (`valuerank users invitations`)",
        )
    return _invitation(row)


async def accept_invitation(conn: AsyncConnection, user_id: str, invitation_id: str) -> Membership:
    """The user joins the organisation with the role offered (the invitation is used up)."""
    pending = await _pending(conn, invitation_id, user_id=user_id)
    await conn.execute(invitations.delete().where(invitations.c.id == pending.id))
    insert = upsert(conn)
    # A membership made meanwhile (the operator's CLI) is kept as it is.
    await conn.execute(
        insert(memberships)
        .values(org_id=pending.org.id, user_id=user_id, role=pending.role.value)
        .on_conflict_do_nothing(index_elements=["org_id", "user_id"])
    )
    role = (
        await conn.execute(
            select(memberships.c.role).where(
                memberships.c.org_id == pending.org.id, memberships.c.user_id == user_id
            )
        )
    ).scalar_one()
    return Membership(pending.org, Role(role))


async def decline_invitation(conn: AsyncConnection, user_id: str, invitation_id: str) -> Invitation:
    """The user says no: the invitation is deleted (the admin may invite again)."""
    pending = await _pending(conn, invitation_id, user_id=user_id)
    await conn.execute(invitations.delete().where(invitations.c.id == pending.id))
    return pending


async def withdraw_invitation(conn: AsyncConnection, org_id: str, invitation_id: str) -> Invitation:
    """The organisation's admin takes a pending invitation back."""
    pending = await _pending(conn, invitation_id, org_id=org_id)
    await conn.execute(invitations.delete().where(invitations.c.id == pending.id))
    return pending
