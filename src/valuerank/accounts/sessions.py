"""Browser sessions: server-side rows, so signing out (or revoking) ends them at once.

The cookie holds a random secret; the row holds its SHA-256, the organisation the session
acts in, its expiry and a CSRF token that the page sends back as `X-CSRF-Token` on every
unsafe request. A session opened from an API token (`/?token=…`) ends with the token.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from valuerank.accounts.errors import SessionRequiredError
from valuerank.accounts.hashing import digest, new_secret
from valuerank.accounts.identity import Identity
from valuerank.accounts.roles import Role
from valuerank.accounts.tokens import token_usable
from valuerank.accounts.users import check_password, choose_org, membership_of
from valuerank.db import Database
from valuerank.db.tables import api_tokens, memberships, sessions, users
from valuerank.errors import NotFoundError
from valuerank.orgs import get_org
from valuerank.queue.dialect import db_now, db_now_plus


@dataclass(frozen=True)
class NewSession:
    """A session just opened: the cookie's secret is known only now."""

    identity: Identity
    secret: str
    expires_at: datetime

    def __repr__(self) -> str:
        return f"NewSession(identity={self.identity!r}, secret=<hidden>)"


async def open_session(
    conn: AsyncConnection,
    org_id: str,
    user_id: str,
    *,
    ttl_seconds: float,
    token_id: str | None = None,
) -> NewSession:
    """A new session of a member of the organisation (NOT_FOUND for anyone else)."""
    role = await conn.scalar(
        select(memberships.c.role).where(
            memberships.c.org_id == org_id, memberships.c.user_id == user_id
        )
    )
    if role is None:
        raise NotFoundError("not a member of this organisation")
    secret, csrf, session_id = new_secret(), new_secret(), str(uuid.uuid4())
    expires_at = (
        await conn.execute(
            sessions.insert()
            .values(
                id=session_id,
                org_id=org_id,
                user_id=user_id,
                token_id=token_id,
                secret_hash=digest(secret),
                csrf_token=csrf,
                expires_at=db_now_plus(conn.dialect.name, ttl_seconds),
            )
            .returning(sessions.c.expires_at)
        )
    ).scalar_one()
    identity = Identity(
        org_id, user_id, Role(role), token_id=token_id, session_id=session_id, csrf_token=csrf
    )
    return NewSession(identity, secret, expires_at)


async def password_login(
    conn: AsyncConnection,
    email: str,
    password: str,
    *,
    org: str | None,
    default_org_id: str,
    ttl_seconds: float,
) -> NewSession:
    """Check the password, then open a session in the organisation chosen (`choose_org`).

    INVALID_CREDENTIALS for a wrong email or password, never saying which.
    """
    user = await check_password(conn, email, password)
    org_id = await choose_org(conn, user.id, org, default_org_id)
    await conn.execute(
        update(users).where(users.c.id == user.id).values(last_login_at=db_now(conn.dialect.name))
    )
    return await open_session(conn, org_id, user.id, ttl_seconds=ttl_seconds)


async def authenticate_session(db: Database, secret: str) -> Identity | None:
    """The identity of a live session (not revoked, not expired, its user still a member of
    its organisation, and the token it was opened from, if any, still usable), or None."""
    if not secret or len(secret) > 256:
        return None
    async with db.transaction() as conn:
        dialect = conn.dialect.name
        row = (
            await conn.execute(
                select(
                    sessions.c.id,
                    sessions.c.org_id,
                    sessions.c.user_id,
                    sessions.c.token_id,
                    sessions.c.csrf_token,
                    memberships.c.role,
                )
                .join(memberships, membership_of(sessions))
                .outerjoin(api_tokens, api_tokens.c.id == sessions.c.token_id)
                .where(
                    sessions.c.secret_hash == digest(secret),
                    sessions.c.revoked_at.is_(None),
                    sessions.c.expires_at > db_now(dialect),
                    sessions.c.token_id.is_(None) | token_usable(dialect),
                )
            )
        ).first()
    if row is None:
        return None
    return Identity(
        row.org_id,
        row.user_id,
        Role(row.role),
        token_id=row.token_id,
        session_id=row.id,
        csrf_token=row.csrf_token,
    )


async def revoke_session(conn: AsyncConnection, session_id: str) -> None:
    """End a session (signing out): its cookie opens nothing any more."""
    await conn.execute(
        update(sessions)
        .where(sessions.c.id == session_id, sessions.c.revoked_at.is_(None))
        .values(revoked_at=db_now(conn.dialect.name))
    )


async def switch_org(conn: AsyncConnection, identity: Identity, org: str) -> Identity:
    """Move a password session to another of its user's organisations.

    A session opened from an API token stays in the token's organisation (SESSION_REQUIRED);
    an organisation the user does not belong to is NOT_FOUND, like one that does not exist.
    """
    if identity.session_id is None or identity.token_id is not None:
        raise SessionRequiredError(
            "only a signed-in browser session can switch organisations",
            hint="an API token acts in one organisation: create one there",
        )
    wanted = await get_org(conn, org)
    role = await conn.scalar(
        select(memberships.c.role).where(
            memberships.c.org_id == wanted.id, memberships.c.user_id == identity.user_id
        )
    )
    if role is None:
        raise NotFoundError(f"no organisation {org!r} among yours")
    await conn.execute(
        update(sessions).where(sessions.c.id == identity.session_id).values(org_id=wanted.id)
    )
    return Identity(
        wanted.id,
        identity.user_id,
        Role(role),
        session_id=identity.session_id,
        csrf_token=identity.csrf_token,
    )
