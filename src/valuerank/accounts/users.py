"""Users and their memberships: who belongs to which organisation, with which role.

A user exists once per install (an email) and may be a member of several organisations, with
one role in each. Every function that reads or changes a membership is scoped by the
organisation; the few that are not (`find_user`, `list_users`) serve the operator's CLI.
An organisation always keeps at least one admin (`LAST_ADMIN`).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Table, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from valuerank.accounts.errors import (
    InvalidCredentialsError,
    LastAdminError,
    MemberExistsError,
    NoMembershipError,
)
from valuerank.accounts.passwords import (
    hash_password_async,
    needs_rehash,
    verify_password_async,
)
from valuerank.accounts.roles import Role
from valuerank.db.tables import api_tokens, memberships, orgs, sessions, users
from valuerank.errors import InvalidInputError, NotFoundError
from valuerank.orgs import Org, create_org, get_org
from valuerank.queue.dialect import db_now, iso, upsert

MAX_EMAIL_LENGTH = 320
MAX_NAME_LENGTH = 200
# Deliberately loose: one @, no spaces, something on each side. Deliverability is not ours
# to judge (`admin@localhost` is a fine address on a lab machine).
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
LOCAL_ADMIN_EMAIL = "local-admin@localhost"
LOCAL_ADMIN_NAME = "Local admin"


@dataclass(frozen=True)
class User:
    id: str
    email: str
    name: str
    created_at: datetime
    last_login_at: datetime | None
    has_password: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "email": self.email,
            "name": self.name,
            "has_password": self.has_password,
            "created_at": iso(self.created_at),
            "last_login_at": iso(self.last_login_at),
        }


@dataclass(frozen=True)
class Member:
    """A user as a member of one organisation."""

    user: User
    org_id: str
    role: Role
    joined_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.user.to_dict(),
            "org_id": self.org_id,
            "role": self.role.value,
            "joined_at": iso(self.joined_at),
        }


@dataclass(frozen=True)
class Membership:
    """One of a user's organisations and the role held there."""

    org: Org
    role: Role

    def to_dict(self) -> dict[str, Any]:
        return {**self.org.to_dict(), "role": self.role.value}


_USER_COLUMNS = (
    users.c.id,
    users.c.email,
    users.c.name,
    users.c.created_at,
    users.c.last_login_at,
    users.c.password_hash.is_not(None).label("has_password"),
)


def _user(row: Row[Any]) -> User:
    return User(
        row.id, row.email, row.name, row.created_at, row.last_login_at, bool(row.has_password)
    )


def _member(row: Row[Any]) -> Member:
    return Member(_user(row), row.org_id, Role(row.role), row.joined_at)


def normalize_email(email: str) -> str:
    """The stored form of an email: trimmed, lower-case; INVALID_INPUT unless it looks like one."""
    value = email.strip().lower()
    if len(value) > MAX_EMAIL_LENGTH or _EMAIL.fullmatch(value) is None:
        raise InvalidInputError(
            f"{email.strip()[:80]!r} is not an email address", hint="e.g. ada@example.org"
        )
    return value


def parse_role(value: str | Role) -> Role:
    try:
        return Role(str(value).strip().lower())
    except ValueError:
        raise InvalidInputError(
            f"{value!r} is not a role", hint=f"roles: {', '.join(r.value for r in Role)}"
        ) from None


def _clean_name(name: str) -> str:
    value = name.strip()
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidInputError(f"the name is longer than {MAX_NAME_LENGTH} characters")
    return value


def _members_query() -> Any:
    return select(
        *_USER_COLUMNS,
        memberships.c.org_id,
        memberships.c.role,
        memberships.c.created_at.label("joined_at"),
    ).join(memberships, memberships.c.user_id == users.c.id)


async def find_user(conn: AsyncConnection, email: str) -> User:
    """The user with this email, in any organisation (for the operator's commands)."""
    row = (
        await conn.execute(select(*_USER_COLUMNS).where(users.c.email == normalize_email(email)))
    ).first()
    if row is None:
        raise NotFoundError(
            f"no user {email.strip()!r}", hint="`valuerank users list` shows the users"
        )
    return _user(row)


async def get_user(conn: AsyncConnection, user_id: str) -> User:
    row = (await conn.execute(select(*_USER_COLUMNS).where(users.c.id == user_id))).first()
    if row is None:
        raise NotFoundError(f"no user with id {user_id!r}")
    return _user(row)


@dataclass(frozen=True)
class WhoAmI:
    """A principal's account: the user (None for anonymous reads), the organisation acted
    in, and the organisations the user may act in."""

    user: User | None
    org: Org
    orgs: list[Membership]


async def who_am_i(
    conn: AsyncConnection, org_id: str, role: Role, user_id: str | None, *, token_bound: bool
) -> WhoAmI:
    """What `/api/auth/me` tells: a token (`token_bound`) acts in its organisation only."""
    org = await get_org(conn, org_id)
    if user_id is None:
        return WhoAmI(None, org, [Membership(org, role)])
    user = await get_user(conn, user_id)
    mine = await memberships_of(conn, user_id)
    return WhoAmI(user, org, [Membership(org, role)] if token_bound else mine)


async def count_users(conn: AsyncConnection) -> int:
    return int(await conn.scalar(select(func.count()).select_from(users)) or 0)


async def get_member(conn: AsyncConnection, org_id: str, user_id: str) -> Member:
    """A member of the organisation; another organisation's user is NOT_FOUND like no user."""
    row = (
        await conn.execute(
            _members_query().where(memberships.c.org_id == org_id, users.c.id == user_id)
        )
    ).first()
    if row is None:
        raise NotFoundError(f"no member with id {user_id!r} in this organisation")
    return _member(row)


async def list_members(
    conn: AsyncConnection, org_id: str, *, after: str | None = None, limit: int | None = None
) -> list[Member]:
    """The organisation's members by email; a page of `limit` after the email `after`."""
    query = _members_query().where(memberships.c.org_id == org_id)
    if after is not None:
        query = query.where(users.c.email > after)
    rows = (await conn.execute(query.order_by(users.c.email).limit(limit))).all()
    return [_member(row) for row in rows]


async def list_users(conn: AsyncConnection) -> list[tuple[User, list[tuple[str, Role]]]]:
    """Every user of the install with the (organisation slug, role) pairs they hold."""
    rows = (
        await conn.execute(
            select(*_USER_COLUMNS, orgs.c.slug, memberships.c.role)
            .outerjoin(memberships, memberships.c.user_id == users.c.id)
            .outerjoin(orgs, orgs.c.id == memberships.c.org_id)
            .order_by(users.c.email, orgs.c.slug)
        )
    ).all()
    found: dict[str, tuple[User, list[tuple[str, Role]]]] = {}
    for row in rows:
        _, roles = found.setdefault(row.id, (_user(row), []))
        if row.slug is not None:
            roles.append((row.slug, Role(row.role)))
    return list(found.values())


async def memberships_of(conn: AsyncConnection, user_id: str) -> list[Membership]:
    """The organisations a user belongs to, oldest membership first."""
    rows = (
        await conn.execute(
            select(orgs, memberships.c.role)
            .join(memberships, memberships.c.org_id == orgs.c.id)
            .where(memberships.c.user_id == user_id)
            .order_by(memberships.c.created_at, orgs.c.slug)
        )
    ).all()
    return [
        Membership(Org(row.id, row.slug, row.name, row.created_at), Role(row.role)) for row in rows
    ]


async def choose_org(
    conn: AsyncConnection, user_id: str, org: str | None, default_org_id: str
) -> str:
    """The organisation a user acts in: `org` (slug or id) if they belong to it (else
    NOT_FOUND, like one that does not exist), else the install's default organisation if
    they belong to it, else their oldest membership (NO_MEMBERSHIP without any)."""
    mine = await memberships_of(conn, user_id)
    if org is not None:
        wanted = await get_org(conn, org)
        if any(m.org.id == wanted.id for m in mine):
            return wanted.id
        raise NotFoundError(f"no organisation {org!r} among the user's")
    if not mine:
        raise NoMembershipError(
            "this account belongs to no organisation",
            hint="an admin adds it: `valuerank users create EMAIL --org ORG --role ROLE`",
        )
    ids = [m.org.id for m in mine]
    return default_org_id if default_org_id in ids else ids[0]


async def add_member(
    conn: AsyncConnection,
    org_id: str,
    email: str,
    role: Role | str,
    *,
    name: str = "",
    password: str | None = None,
) -> Member:
    """Make `email` a member of the organisation with `role`, creating the user if needed.

    A password (checked against the policy, stored as an argon2id hash) can only be given
    to a new user. MEMBER_EXISTS when the user is a member already (change the role with
    `set_role`).
    """
    address = normalize_email(email)
    chosen = parse_role(role)
    display = _clean_name(name)
    row = (await conn.execute(select(*_USER_COLUMNS).where(users.c.email == address))).first()
    if row is None:
        password_hash = None if password is None else await hash_password_async(password)
        user_id = str(uuid.uuid4())
        await conn.execute(
            users.insert().values(
                id=user_id, email=address, name=display, password_hash=password_hash
            )
        )
    else:
        user_id = row.id
        if password is not None:
            raise InvalidInputError(
                f"{address} has an account already: its password stays as it is",
                hint="add the member without a password; they sign in with their own",
            )
        member = await conn.scalar(
            select(memberships.c.role).where(
                memberships.c.org_id == org_id, memberships.c.user_id == user_id
            )
        )
        if member is not None:
            raise MemberExistsError(
                f"{address} is a member already ({member})",
                hint="change the role with `valuerank users set-role` (PATCH /api/users/{id})",
            )
    await conn.execute(memberships.insert().values(org_id=org_id, user_id=user_id, role=chosen))
    return await get_member(conn, org_id, user_id)


async def _admins(conn: AsyncConnection, org_id: str) -> list[str]:
    """The organisation's admins, rows locked on PostgreSQL so concurrent demotions queue up
    (SQLite writers are serialised anyway)."""
    rows = await conn.execute(
        select(memberships.c.user_id)
        .where(memberships.c.org_id == org_id, memberships.c.role == Role.ADMIN.value)
        .with_for_update()
    )
    return [row.user_id for row in rows]


async def _keep_an_admin(conn: AsyncConnection, org_id: str, user_id: str, action: str) -> None:
    admins = await _admins(conn, org_id)
    if admins == [user_id]:
        raise LastAdminError(
            f"cannot {action} the last admin of the organisation",
            hint="make another member admin first",
        )


async def set_role(conn: AsyncConnection, org_id: str, user_id: str, role: Role | str) -> Member:
    """Give a member another role (takes effect on their next request, tokens included)."""
    chosen = parse_role(role)
    current = await get_member(conn, org_id, user_id)
    if current.role is Role.ADMIN and chosen is not Role.ADMIN:
        await _keep_an_admin(conn, org_id, user_id, "demote")
    await conn.execute(
        update(memberships)
        .where(memberships.c.org_id == org_id, memberships.c.user_id == user_id)
        .values(role=chosen.value)
    )
    return await get_member(conn, org_id, user_id)


def membership_of(table: Table) -> ColumnElement[bool]:
    """The join of `memberships` on a credential's (org_id, user_id): the membership — and so
    the role — it acts with now (none once the user left the organisation)."""
    return (memberships.c.org_id == table.c.org_id) & (memberships.c.user_id == table.c.user_id)


async def revoke_credentials(conn: AsyncConnection, user_id: str, org_id: str | None) -> None:
    """Revoke a user's API tokens and sessions in one organisation (None: sessions only, in
    every organisation — a password change)."""
    now = db_now(conn.dialect.name)
    tables = (sessions,) if org_id is None else (api_tokens, sessions)
    for table in tables:
        query = update(table).where(table.c.user_id == user_id, table.c.revoked_at.is_(None))
        if org_id is not None:
            query = query.where(table.c.org_id == org_id)
        await conn.execute(query.values(revoked_at=now))


async def remove_member(conn: AsyncConnection, org_id: str, user_id: str) -> Member:
    """Remove a member from the organisation; their tokens and sessions there are revoked."""
    current = await get_member(conn, org_id, user_id)
    if current.role is Role.ADMIN:
        await _keep_an_admin(conn, org_id, user_id, "remove")
    await revoke_credentials(conn, user_id, org_id)
    await conn.execute(
        memberships.delete().where(memberships.c.org_id == org_id, memberships.c.user_id == user_id)
    )
    return current


async def set_password(conn: AsyncConnection, user_id: str, password: str) -> None:
    """Set a user's password; their open browser sessions end (they sign in again)."""
    password_hash = await hash_password_async(password)
    result = await conn.execute(
        update(users).where(users.c.id == user_id).values(password_hash=password_hash)
    )
    if result.rowcount == 0:
        raise NotFoundError(f"no user with id {user_id!r}")
    await revoke_credentials(conn, user_id, None)


async def check_password(conn: AsyncConnection, email: str, password: str) -> User:
    """The user whose email and password these are; INVALID_CREDENTIALS otherwise, taking as
    long whether or not the email exists. A hash made with weaker parameters is upgraded."""
    try:
        address = normalize_email(email)
    except InvalidInputError:
        address = None
    row = None
    if address is not None:
        row = (
            await conn.execute(
                select(*_USER_COLUMNS, users.c.password_hash).where(users.c.email == address)
            )
        ).first()
    stored = row.password_hash if row is not None else None
    # Always verify (against a dummy hash when there is no account or no password), before
    # looking at `row`: an unknown email must cost the same argon2 work as a wrong password.
    matches = await verify_password_async(stored, password)
    if row is None or not matches:
        raise InvalidCredentialsError(
            "wrong email or password",
            hint="check both; users without a password sign in with an API token "
            "(open /?token=<token>)",
        )
    if stored is not None and needs_rehash(stored):
        await conn.execute(
            update(users)
            .where(users.c.id == row.id)
            .values(password_hash=await hash_password_async(password))
        )
    return _user(row)


async def create_org_with_admin(
    conn: AsyncConnection, user_id: str, name: str, *, slug: str | None = None
) -> Membership:
    """A new organisation whose first admin is `user_id` (see `valuerank.orgs.create_org`)."""
    org = await create_org(conn, name, slug=slug)
    await conn.execute(
        memberships.insert().values(org_id=org.id, user_id=user_id, role=Role.ADMIN.value)
    )
    return Membership(replace(org, members=1), Role.ADMIN)


async def ensure_local_admin(conn: AsyncConnection, org_id: str) -> str:
    """The id of the local admin (auto-login), created on demand as admin of `org_id`."""
    insert = upsert(conn)
    await conn.execute(
        insert(users)
        .values(id=str(uuid.uuid4()), email=LOCAL_ADMIN_EMAIL, name=LOCAL_ADMIN_NAME)
        .on_conflict_do_nothing(index_elements=["email"])
    )
    user_id = str(await conn.scalar(select(users.c.id).where(users.c.email == LOCAL_ADMIN_EMAIL)))
    stmt = insert(memberships).values(org_id=org_id, user_id=user_id, role=Role.ADMIN.value)
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["org_id", "user_id"], set_={"role": Role.ADMIN.value}
        )
    )
    return user_id
