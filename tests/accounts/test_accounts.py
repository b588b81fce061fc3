"""Users, memberships, API tokens and sessions on both databases: every query scoped by
organisation, revocation and expiry by the database clock, the last admin kept."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, update

from valuerank.accounts import (
    InvalidCredentialsError,
    LastAdminError,
    MemberExistsError,
    NoMembershipError,
    Role,
    SessionRequiredError,
    add_member,
    authenticate_session,
    authenticate_token,
    choose_org,
    create_org_with_admin,
    create_token,
    ensure_local_admin,
    find_user,
    get_member,
    get_token,
    list_members,
    list_tokens,
    list_users,
    open_session,
    password_login,
    remove_member,
    revoke_session,
    revoke_token,
    set_password,
    set_role,
    switch_org,
    who_am_i,
)
from valuerank.accounts.hashing import digest
from valuerank.db import Database
from valuerank.db.tables import api_tokens, sessions, users
from valuerank.errors import ConflictError, InvalidInputError, NotFoundError
from valuerank.orgs import create_org, ensure_org, get_org, list_orgs
from valuerank.queue.dialect import db_now_plus
from valuerank.refs import short_id

PASSWORD = "correct horse battery staple"


async def test_members_roles_and_the_last_admin(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
        ada = await add_member(conn, org_id, " Ada@Example.ORG ", "admin", name="Ada")
        assert ada.user.email == "ada@example.org" and ada.role is Role.ADMIN
        assert not ada.user.has_password
        bob = await add_member(conn, org_id, "bob@example.org", Role.VIEWER)
        # The same person joins a second organisation: one user, two memberships.
        again = await add_member(conn, other, "ADA@example.org", "member")
        assert again.user.id == ada.user.id and again.role is Role.MEMBER
        with pytest.raises(MemberExistsError):
            await add_member(conn, org_id, "ada@example.org", "viewer")
        with pytest.raises(InvalidInputError, match="not an email"):
            await add_member(conn, org_id, "not-an-email", "viewer")
        with pytest.raises(InvalidInputError, match="not a role"):
            await add_member(conn, org_id, "carol@example.org", "owner")
        with pytest.raises(InvalidInputError, match="password stays"):
            await add_member(conn, other, "bob@example.org", "viewer", password=PASSWORD)

        members = await list_members(conn, org_id)
        assert [m.user.email for m in members] == ["ada@example.org", "bob@example.org"]
        page = await list_members(conn, org_id, after="ada@example.org", limit=1)
        assert [m.user.email for m in page] == ["bob@example.org"]
        # Scoped: bob is nobody in `other`.
        with pytest.raises(NotFoundError):
            await get_member(conn, other, bob.user.id)
        with pytest.raises(NotFoundError):
            await set_role(conn, other, bob.user.id, "admin")

        with pytest.raises(LastAdminError):
            await set_role(conn, org_id, ada.user.id, "member")
        with pytest.raises(LastAdminError):
            await remove_member(conn, org_id, ada.user.id)
        assert (await set_role(conn, org_id, bob.user.id, "admin")).role is Role.ADMIN
        assert (await set_role(conn, org_id, ada.user.id, "viewer")).role is Role.VIEWER
        everyone = {u.email: roles for u, roles in await list_users(conn)}
        assert everyone["ada@example.org"] == [("default", Role.VIEWER), ("other", Role.MEMBER)]
        assert [(o.slug, o.members) for o in await list_orgs(conn)] == [
            ("default", 2),
            ("other", 1),
        ]


async def test_tokens_authenticate_until_revoked_expired_or_removed(
    db: Database, org_id: str
) -> None:
    async with db.transaction() as conn:
        other = await ensure_org(conn, "other")
        admin = await add_member(conn, org_id, "admin@example.org", "admin")
        viewer = await add_member(conn, org_id, "viewer@example.org", "viewer")
        new = await create_token(conn, org_id, viewer.user.id, name="ci")
        with pytest.raises(NotFoundError):  # not a member there
            await create_token(conn, other, viewer.user.id)
        with pytest.raises(InvalidInputError, match="expiry"):
            await create_token(conn, org_id, viewer.user.id, expires_in_days=0)
        with pytest.raises(InvalidInputError, match="format"):
            await create_token(conn, org_id, viewer.user.id, token="guessable")
    token = new.token
    assert token not in repr(new) and new.info.display_prefix == token[:12]
    # Only the digest is stored.
    async with db.transaction() as conn:
        stored = (await conn.execute(select(api_tokens))).all()
    assert [row.token_hash for row in stored] == [digest(token)]
    assert all(token not in str(tuple(row)) for row in stored)

    identity = await authenticate_token(db, token)
    assert identity is not None
    assert (identity.org_id, identity.user_id, identity.role) == (
        org_id,
        viewer.user.id,
        Role.VIEWER,
    )
    assert identity.token_id == new.info.id
    assert await authenticate_token(db, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert await authenticate_token(db, "vrt_" + "x" * 43) is None
    async with db.transaction() as conn:
        used = await get_token(conn, org_id, new.info.id)
        assert used.last_used_at is not None and used.status() == "active"
        # The role is read at each request: a promotion applies to the token at once.
        await set_role(conn, org_id, viewer.user.id, "member")
    assert (await authenticate_token(db, token)).role is Role.MEMBER  # type: ignore[union-attr]

    async with db.transaction() as conn:
        # Another organisation cannot see, nor revoke, the token.
        with pytest.raises(NotFoundError):
            await revoke_token(conn, other, new.info.id)
        # Nor can another member of the same organisation, when scoped to their own tokens.
        with pytest.raises(NotFoundError):
            await revoke_token(conn, org_id, new.info.id, user_id=admin.user.id)
        revoked = await revoke_token(conn, org_id, short_id(new.info.id))
        assert revoked.status() == "revoked"
        again = await revoke_token(conn, None, new.info.id)
        assert again.revoked_at == revoked.revoked_at
    assert await authenticate_token(db, token) is None

    async with db.transaction() as conn:
        expiring = await create_token(conn, org_id, viewer.user.id, expires_in_days=1)
    assert await authenticate_token(db, expiring.token) is not None
    async with db.transaction() as conn:
        await conn.execute(
            update(api_tokens)
            .where(api_tokens.c.id == expiring.info.id)
            .values(expires_at=db_now_plus(conn.dialect.name, -1))
        )
        assert (await get_token(conn, org_id, expiring.info.id)).status() == "expired"
    assert await authenticate_token(db, expiring.token) is None

    async with db.transaction() as conn:
        kept = await create_token(conn, org_id, viewer.user.id)
        await remove_member(conn, org_id, viewer.user.id)
        assert (await get_token(conn, org_id, kept.info.id)).status() == "revoked"
    assert await authenticate_token(db, kept.token) is None


async def test_token_listing_pages_newest_first(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, "m@example.org", "member")
        made = [
            (await create_token(conn, org_id, member.user.id, name=f"t{i}")).info.id
            for i in range(5)
        ]
    async with db.transaction() as conn:
        everything = [t.id for t in await list_tokens(conn, org_id)]
        assert sorted(everything) == sorted(made)
        pages: list[str] = []
        after = None
        while True:
            chunk = await list_tokens(conn, org_id, after=after, limit=2)
            pages += [t.id for t in chunk]
            if len(chunk) < 2:
                break
            after = chunk[-1].id
        assert pages == everything  # keyset pages give the same order, nothing twice
        assert await list_tokens(conn, await ensure_org(conn, "other")) == []


async def test_password_login_sessions_and_switching(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        other = await create_org(conn, "Other Lab")
        ada = await add_member(conn, org_id, "ada@example.org", "member", password=PASSWORD)
        await add_member(conn, other.id, "ada@example.org", "viewer")
        await add_member(conn, org_id, "tokens-only@example.org", "viewer")
        stored_hash = await conn.scalar(
            select(users.c.password_hash).where(users.c.id == ada.user.id)
        )
    assert stored_hash is not None and stored_hash.startswith("$argon2id$")

    async with db.transaction() as conn:
        for email, password in [
            ("ada@example.org", PASSWORD + "!"),
            ("nobody@example.org", PASSWORD),
            ("tokens-only@example.org", PASSWORD),
            ("not an email", PASSWORD),
        ]:
            with pytest.raises(InvalidCredentialsError):
                await password_login(
                    conn, email, password, org=None, default_org_id=org_id, ttl_seconds=60
                )
        opened = await password_login(
            conn, "ADA@example.org", PASSWORD, org=None, default_org_id=org_id, ttl_seconds=60
        )
        assert (await find_user(conn, "ada@example.org")).last_login_at is not None
    assert opened.secret not in repr(opened)
    identity = await authenticate_session(db, opened.secret)
    assert identity is not None and identity.org_id == org_id and identity.role is Role.MEMBER
    assert identity.csrf_token == opened.identity.csrf_token and identity.session_id
    assert await authenticate_session(db, opened.secret + "x") is None
    async with db.transaction() as conn:
        rows = (await conn.execute(select(sessions))).all()
    assert all(opened.secret not in str(tuple(r)) for r in rows)

    async with db.transaction() as conn:
        moved = await switch_org(conn, identity, "other-lab")
        assert moved.org_id == other.id and moved.role is Role.VIEWER
        with pytest.raises(NotFoundError):
            await switch_org(conn, identity, "nowhere")
        who = await who_am_i(conn, moved.org_id, moved.role, ada.user.id, token_bound=False)
        assert {m.org.slug for m in who.orgs} == {"default", "other-lab"}
    now = await authenticate_session(db, opened.secret)
    assert now is not None and now.org_id == other.id

    async with db.transaction() as conn:
        await revoke_session(conn, identity.session_id)
    assert await authenticate_session(db, opened.secret) is None

    # A password change ends the sessions; the new password works, the old one not.
    async with db.transaction() as conn:
        second = await password_login(
            conn, "ada@example.org", PASSWORD, org="other-lab", default_org_id=org_id,
            ttl_seconds=60,
        )  # fmt: skip
        assert second.identity.org_id == other.id
        with pytest.raises(InvalidInputError):
            await set_password(conn, ada.user.id, "short")
        await set_password(conn, ada.user.id, "a brand new passphrase")
    assert await authenticate_session(db, second.secret) is None
    async with db.transaction() as conn:
        with pytest.raises(InvalidCredentialsError):
            await password_login(
                conn, "ada@example.org", PASSWORD, org=None, default_org_id=org_id, ttl_seconds=60
            )


async def test_sessions_expire_and_end_with_their_token(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        member = await add_member(conn, org_id, "m@example.org", "member")
        token = await create_token(conn, org_id, member.user.id)
        from_token = await open_session(
            conn, org_id, member.user.id, ttl_seconds=60, token_id=token.info.id
        )
        short = await open_session(conn, org_id, member.user.id, ttl_seconds=0.5)
    assert await authenticate_session(db, from_token.secret) is not None
    async with db.transaction() as conn:
        with pytest.raises(SessionRequiredError, match="API token acts in one"):
            await switch_org(conn, from_token.identity, "default")
        await revoke_token(conn, org_id, token.info.id)
    assert await authenticate_session(db, from_token.secret) is None
    await asyncio.sleep(1.5)  # by the database clock
    assert await authenticate_session(db, short.secret) is None


async def test_org_choice_new_orgs_and_the_local_admin(db: Database, org_id: str) -> None:
    async with db.transaction() as conn:
        loner = await add_member(conn, org_id, "loner@example.org", "viewer")
        await remove_member(conn, org_id, loner.user.id)
        with pytest.raises(NoMembershipError):
            await choose_org(conn, loner.user.id, None, org_id)
        founder = await add_member(conn, org_id, "f@example.org", "member")
        founded = await create_org_with_admin(conn, founder.user.id, "Acme Research")
        assert founded.org.slug == "acme-research" and founded.role is Role.ADMIN
        assert await choose_org(conn, founder.user.id, None, org_id) == org_id
        assert await choose_org(conn, founder.user.id, "acme-research", org_id) == founded.org.id
        with pytest.raises(ConflictError):
            await create_org(conn, "Acme research")
        with pytest.raises(InvalidInputError, match="slug"):
            await create_org(conn, "Fine", slug="Not OK")
        with pytest.raises(InvalidInputError, match="slug"):
            await create_org(conn, "!!!")
        assert (await get_org(conn, founded.org.id)).slug == "acme-research"
        first = await ensure_local_admin(conn, org_id)
        assert await ensure_local_admin(conn, org_id) == first
        assert (await get_member(conn, org_id, first)).role is Role.ADMIN
