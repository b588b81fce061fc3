"""The sign-in page `/login`: email and password, posted by the page's JavaScript to
`POST /api/auth/login` (which sets the session cookie), then back to the page that asked for
it (`next`). The authentication middleware serves it to anyone and sends browsers here when a
page needs a sign-in. Signing out and switching organisation live in the header
(static/auth.js)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from valuerank.api.deps import Principal
from valuerank.web.templating import templates

router = APIRouter(include_in_schema=False)

NextQuery = Annotated[str, Query(alias="next", max_length=2000)]


def safe_next(target: str) -> str:
    """A path of this site to go back to: never another site (`//host`, `/\\host`,
    `https://…`), which would make the sign-in page an open redirect."""
    if not target.startswith("/") or target.startswith(("//", "/\\")) or "\\" in target:
        return "/"
    if any(ord(c) < 0x20 or c == "\x7f" for c in target):
        return "/"
    return "/" if target.startswith("/login") else target


@router.get("/login", response_class=HTMLResponse)
async def login_page(
    request: Request, back_to: NextQuery = "/", expired: bool = False, signed_out: bool = False
) -> Response:
    principal: Principal | None = getattr(request.state, "principal", None)
    response = templates.TemplateResponse(
        request,
        "login.html",
        {
            "next": safe_next(back_to),
            "expired": expired,
            "signed_out": signed_out,
            "current": principal,
        },
    )
    response.headers["Cache-Control"] = "no-store"
    return response
