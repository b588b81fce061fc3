"""The settings page: the models registry (weights, active; changed by the install's admins),
the organisation's provider credentials (masked; set and delete for admins), its defaults for
new runs (judges, summary model; admins change them), members and
roles, API tokens (created and shown once, revoked). Reads call the services the API calls;
every change goes through the JSON API from the page's JavaScript, which enforces the roles
again."""

from __future__ import annotations

import os

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.accounts import Role, list_tokens
from valuerank.accounts.users import list_members
from valuerank.api.deps import Viewer
from valuerank.credentials.store import list_credentials
from valuerank.org_defaults import get_org_defaults
from valuerank.providers.presets import known_providers
from valuerank.registry.service import ensure_registry, list_models
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)


@router.get("/settings", response_class=HTMLResponse)
async def settings_page(request: Request, ctx: Viewer) -> Response:
    admin = ctx.principal.role.allows(Role.ADMIN)
    # Like GET /api/tokens: admins see everyone's tokens, others their own.
    owner = None if admin else ctx.principal.user_id
    await ensure_registry(ctx.db)  # an empty registry gets the catalog
    async with ctx.db.transaction() as conn:
        registry = await list_models(conn)
        credentials = await list_credentials(conn, ctx.org_id, environ=os.environ, env_hints=False)
        members = await list_members(conn, ctx.org_id, limit=500)
        defaults = await get_org_defaults(conn, ctx.org_id)
        tokens = (
            await list_tokens(conn, ctx.org_id, user_id=owner, limit=500)
            if admin or owner is not None
            else []
        )
    return templates.TemplateResponse(
        request,
        "settings.html",
        {
            "admin": admin,
            # The registry is the install's: its admins (PUT/PATCH /api/models) change it.
            "install_admin": admin and ctx.in_install_org,
            "principal": ctx.principal,
            "registry": registry,
            "credentials": credentials,
            "providers": known_providers(),
            "members": members,
            "tokens": tokens,
            "defaults": defaults,
            "roles": [role.value for role in Role],
        },
    )
