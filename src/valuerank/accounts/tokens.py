"""API tokens: random, shown once, stored as their SHA-256; each acts as its user in one
organisation, with the role the user holds there at the time of each request.

A token stops working at once when it is revoked, when it expires, or when its user leaves
the organisation. `last_used_at` is kept to the minute (one write a minute at most per token;
an API process that serves a token from its cache notes its use when it next reads it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.accounts.hashing import (
    TOKEN_PREFIX,
    digest,
    display_prefix,
    is_api_token,
    new_api_token,
)
from valuerank.accounts.identity import Identity
from valuerank.accounts.roles import Role
from valuerank.accounts.users import get_member, membership_of
from valuerank.db import Database
from valuerank.db.tables import api_tokens, memberships, users
from valuerank.errors import InvalidInputError
from valuerank.queue.dialect import as_utc, db_now, db_now_plus, iso, to_db
from valuerank.refs import first_by_ref

MAX_TOKEN_NAME = 100
MAX_EXPIRY_DAYS = 3650
LAST_USED_RESOLUTION_SECONDS = 60.0


@dataclass(frozen=True)
class TokenInfo:
    """What may be shown about a token: never the token."""

    id: str
    org_id: str
    user_id: str
    user_email: str
    name: str
    display_prefix: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None

    def status(self, now: datetime | None = None) -> str:
        """active, revoked or expired (at `now`, default the current time)."""
        if self.revoked_at is not None:
            return "revoked"
        moment = now or datetime.now(UTC)
        if self.expires_at is not None and as_utc(self.expires_at) <= moment:
            return "expired"
        return "active"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "org_id": self.org_id,
            "user_id": self.user_id,
            "user_email": self.user_email,
            "name": self.name,
            "prefix": self.display_prefix,
            "status": self.status(),
            "created_at": iso(self.created_at),
            "last_used_at": iso(self.last_used_at),
            "expires_at": iso(self.expires_at),
            "revoked_at": iso(self.revoked_at),
        }


@dataclass(frozen=True)
class NewToken:
    """A token just created: the only time the token itself is known."""

    info: TokenInfo
    token: str

    def __repr__(self) -> str:
        return f"NewToken(info={self.info!r}, token=<hidden>)"

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, **self.info.to_dict()}


def _info(row: Row[Any]) -> TokenInfo:
    return TokenInfo(
        row.id,
        row.org_id,
        row.user_id,
        row.email,
        row.name,
        row.display_prefix,
        row.created_at,
        row.last_used_at,
        row.expires_at,
        row.revoked_at,
    )


def _select() -> Any:
    return select(
        api_tokens.c.id,
        api_tokens.c.org_id,
        api_tokens.c.user_id,
        users.c.email,
        api_tokens.c.name,
        api_tokens.c.display_prefix,
        api_tokens.c.created_at,
        api_tokens.c.last_used_at,
        api_tokens.c.expires_at,
        api_tokens.c.revoked_at,
    ).join(users, users.c.id == api_tokens.c.user_id)


def _clean_name(name: str) -> str:
    value = name.strip()
    if len(value) > MAX_TOKEN_NAME:
        raise InvalidInputError(f"the token name is longer than {MAX_TOKEN_NAME} characters")
    return value


async def create_token(
    conn: AsyncConnection,
    org_id: str,
    user_id: str,
    *,
    name: str = "",
    expires_in_days: float | None = None,
    token: str | None = None,
) -> NewToken:
    """A new token for a member of the organisation (NOT_FOUND for anyone else).

    `token` provisions a token generated elsewhere (a secrets manager): it must look like
    ours (`vrt_` and 43+ URL-safe random characters); by default one is drawn here.
    """
    await get_member(conn, org_id, user_id)
    if expires_in_days is not None and not 0 < expires_in_days <= MAX_EXPIRY_DAYS:
        raise InvalidInputError(
            f"the expiry must be between 0 and {MAX_EXPIRY_DAYS} days",
            hint="omit it for a token that lasts until it is revoked",
        )
    secret = new_api_token() if token is None else token
    if not is_api_token(secret):
        raise InvalidInputError(
            "not an API token of this format",
            hint=f"{TOKEN_PREFIX} followed by at least 43 URL-safe random characters",
        )
    expires_at = (
        None
        if expires_in_days is None
        else db_now_plus(conn.dialect.name, expires_in_days * 86400.0)
    )
    token_id = str(uuid.uuid4())
    await conn.execute(
        api_tokens.insert().values(
            id=token_id,
            org_id=org_id,
            user_id=user_id,
            name=_clean_name(name),
            token_hash=digest(secret),
            display_prefix=display_prefix(secret),
            expires_at=expires_at,
        )
    )
    return NewToken(await get_token(conn, org_id, token_id), secret)


async def get_token(
    conn: AsyncConnection, org_id: str | None, ref: str, *, user_id: str | None = None
) -> TokenInfo:
    """A token by id or unique id prefix, in `org_id` (None: the operator, any organisation),
    and of `user_id` when given (someone else's token is NOT_FOUND, like no token)."""
    query = _select()
    if org_id is not None:
        query = query.where(api_tokens.c.org_id == org_id)
    if user_id is not None:
        query = query.where(api_tokens.c.user_id == user_id)
    row = await first_by_ref(conn, query, api_tokens.c.id, ref, kind="token", listing="tokens")
    return _info(row)


async def list_tokens(
    conn: AsyncConnection,
    org_id: str | None,
    *,
    user_id: str | None = None,
    after: str | None = None,
    limit: int | None = None,
) -> list[TokenInfo]:
    """Tokens of the organisation (None: every organisation, for the operator), optionally of
    one user; newest first. A page: `limit` tokens after the token whose id is `after`.
    A `user_id` that is not a member of the organisation is NOT_FOUND (as in a path)."""
    if org_id is not None and user_id is not None:
        await get_member(conn, org_id, user_id)
    query = _select()
    if org_id is not None:
        query = query.where(api_tokens.c.org_id == org_id)
    if user_id is not None:
        query = query.where(api_tokens.c.user_id == user_id)
    if after is not None:
        # Compared in SQL with the stored value (not a bound copy of it): both databases
        # then order the timestamps the same way, whatever their text format.
        last = select(api_tokens.c.created_at).where(api_tokens.c.id == after).scalar_subquery()
        query = query.where(
            or_(
                api_tokens.c.created_at < last,
                and_(api_tokens.c.created_at == last, api_tokens.c.id < after),
            )
        )
    order = (api_tokens.c.created_at.desc(), api_tokens.c.id.desc())
    rows = (await conn.execute(query.order_by(*order).limit(limit))).all()
    return [_info(row) for row in rows]


async def revoke_token(
    conn: AsyncConnection, org_id: str | None, ref: str, *, user_id: str | None = None
) -> TokenInfo:
    """Revoke a token (and so the sessions opened from it), at once; revoking twice keeps the
    first time. `org_id` None: the operator, any organisation; `user_id`: only that user's."""
    info = await get_token(conn, org_id, ref, user_id=user_id)
    await conn.execute(
        update(api_tokens)
        .where(api_tokens.c.id == info.id, api_tokens.c.revoked_at.is_(None))
        .values(revoked_at=db_now(conn.dialect.name))
    )
    return await get_token(conn, info.org_id, info.id)


def token_usable(dialect: str) -> Any:
    """The SQL condition of a token that authenticates: neither revoked nor expired."""
    return api_tokens.c.revoked_at.is_(None) & or_(
        api_tokens.c.expires_at.is_(None), api_tokens.c.expires_at > db_now(dialect)
    )


@dataclass(frozen=True)
class TokenCheck:
    """A usable token's identity, and for how long it stays usable unless changed: seconds
    until it expires by the database's clock (None: it never expires)."""

    identity: Identity
    seconds_left: float | None


async def check_token(db: Database, token: str) -> TokenCheck | None:
    """The identity of a usable token, or None (unknown, revoked, expired, or its user left
    the organisation). Notes when it was last used, to the minute."""
    if not is_api_token(token):
        return None
    async with db.transaction() as conn:
        row = (
            await conn.execute(
                select(
                    api_tokens.c.id,
                    api_tokens.c.org_id,
                    api_tokens.c.user_id,
                    api_tokens.c.last_used_at,
                    api_tokens.c.expires_at,
                    memberships.c.role,
                    db_now(conn.dialect.name).label("now"),
                )
                .join(memberships, membership_of(api_tokens))
                .where(api_tokens.c.token_hash == digest(token), token_usable(conn.dialect.name))
            )
        ).first()
    if row is None:
        return None
    now = as_utc(row.now)
    last = row.last_used_at
    if last is None or (now - as_utc(last)).total_seconds() >= LAST_USED_RESOLUTION_SECONDS:
        # Its own short write transaction: the read above never has to become a writer.
        async with db.transaction() as conn:
            await conn.execute(
                update(api_tokens)
                .where(api_tokens.c.id == row.id)
                .values(last_used_at=to_db(conn.dialect.name, now))
            )
    identity = Identity(row.org_id, row.user_id, Role(row.role), token_id=row.id)
    expires = row.expires_at
    left = None if expires is None else (as_utc(expires) - now).total_seconds()
    return TokenCheck(identity, left)


async def authenticate_token(db: Database, token: str) -> Identity | None:
    """The identity of a usable token, or None (see `check_token`)."""
    check = await check_token(db, token)
    return None if check is None else check.identity
