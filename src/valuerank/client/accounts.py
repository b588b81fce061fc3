"""Members, tokens, keys and defaults asked of a server (`valuerank users|tokens|credentials|
orgs …` with VALUERANK_API_URL set), in the shapes the local commands print.

A server acts in its token's organisation only: an `--org` naming another one is refused
(WRONG_ORGANISATION) rather than quietly answered for the token's; a member is named by email
as locally, and found among that organisation's members."""

from __future__ import annotations

from typing import Any

from valuerank.client.api import API_TOKEN_ENV, ApiClient, ApiError, segment


def server_org(client: ApiClient, org: str | None = None) -> dict[str, Any]:
    """The organisation the token acts in (id, slug, name); WRONG_ORGANISATION when `org`
    (a slug or id) names another."""
    mine: dict[str, Any] = client.get("/api/auth/me")["org"]
    if org is not None and org.strip() not in (mine["slug"], mine["id"]):
        raise ApiError(
            f"the server answers for organisation {mine['slug']} (its token's), not {org!r}",
            code="WRONG_ORGANISATION",
            hint=f"set {API_TOKEN_ENV} to a token of {org}, or leave out --org",
        )
    return mine


def me(client: ApiClient) -> dict[str, Any]:
    data: dict[str, Any] = client.get("/api/auth/me")
    return data


def members(client: ApiClient) -> list[dict[str, Any]]:
    """The organisation's members by email, with their roles."""
    return client.items("/api/users", "users")


def member(client: ApiClient, email: str) -> dict[str, Any]:
    """The member with this email (NOT_FOUND, as locally, when there is none here)."""
    wanted = email.strip().lower()
    for found in members(client):
        if found["email"].lower() == wanted:
            return found
    raise ApiError(
        f"no user {email.strip()!r} in this organisation",
        code="NOT_FOUND",
        hint="`valuerank users list` shows its members",
    )


def with_org(data: dict[str, Any], org: dict[str, Any]) -> dict[str, Any]:
    return {**data, "org": org["slug"]}


# -- users -----------------------------------------------------------------------------------


def list_members(client: ApiClient, org: str | None) -> list[dict[str, Any]]:
    """`users list --org ORG --json`, for the token's organisation."""
    mine = server_org(client, org)
    return [with_org(m, mine) for m in members(client)]


def set_role(client: ApiClient, email: str, org: str | None, role: str) -> dict[str, Any]:
    mine = server_org(client, org)
    user = member(client, email)
    return with_org(client.patch(f"/api/users/{segment(user['id'])}", {"role": role}), mine)


def remove_member(client: ApiClient, email: str, org: str | None) -> dict[str, Any]:
    mine = server_org(client, org)
    user = member(client, email)
    removed = dict(client.delete(f"/api/users/{segment(user['id'])}"))
    removed.pop("removed", None)  # the local answer is the membership removed
    return with_org(removed, mine)


def invitations(client: ApiClient, org: str | None, user: str | None) -> list[dict[str, Any]]:
    """Those the organisation sent, or (`user`: the caller's own email) those received: a
    server shows no one else's."""
    if user is None:
        server_org(client, org)
        sent: list[dict[str, Any]] = client.get("/api/users/invitations")["invitations"]
        return sent
    caller = me(client)["user"]
    if caller is None or caller["email"].lower() != user.strip().lower():
        raise ApiError(
            "a server shows only the invitations its caller received",
            code="FORBIDDEN",
            hint="use a token of that user, or leave out --user for the organisation's",
        )
    received: list[dict[str, Any]] = client.get("/api/invitations")["invitations"]
    return received


# -- tokens ----------------------------------------------------------------------------------


def create_token(
    client: ApiClient, user: str, org: str | None, name: str, expires_days: float | None
) -> dict[str, Any]:
    """A new token of the member `user` in the token's organisation (shown once)."""
    mine = server_org(client, org)
    body: dict[str, Any] = {"name": name, "user_id": member(client, user)["id"]}
    if expires_days is not None:
        body["expires_in_days"] = expires_days
    return with_org(client.post("/api/tokens", body), mine)


def list_tokens(client: ApiClient, user: str | None, org: str | None) -> list[dict[str, Any]]:
    if org is not None:
        server_org(client, org)
    user_id = None if user is None else member(client, user)["id"]
    return client.items("/api/tokens", "tokens", user_id=user_id)


# -- provider keys ---------------------------------------------------------------------------


def set_credential(client: ApiClient, provider: str, api_key: str) -> dict[str, Any]:
    """PUT the organisation's key for `provider`: it travels in the body only, and is stored
    with the server's VALUERANK_SECRET_KEY. A key the database would refuse is refused here
    alike (INVALID_INPUT, not the route's schema's VALIDATION_ERROR)."""
    key = api_key.strip()
    if not key:
        raise ApiError("the API key is empty", code="INVALID_INPUT")
    if any(ch.isspace() for ch in key):
        raise ApiError(
            "the API key contains whitespace",
            code="INVALID_INPUT",
            hint="paste only the key, on one line",
        )
    data: dict[str, Any] = client.put(
        f"/api/credentials/{segment(provider.strip().lower())}", {"api_key": key}
    )
    return data


# -- organisations ---------------------------------------------------------------------------


def set_defaults(
    client: ApiClient,
    *,
    judges: list[str],
    summary_model: str | None,
    clear_judges: bool,
    clear_summary_model: bool,
    allow_unknown: bool,
) -> dict[str, Any]:
    """The organisation's defaults, changed as `orgs defaults` does locally: what is not
    named keeps its value (PUT replaces them all, so the current ones come first)."""
    current: dict[str, Any] = client.get("/api/orgs/defaults")
    body = {
        "judges": [] if clear_judges else judges or current["judges"],
        "summary_model": None if clear_summary_model else summary_model or current["summary_model"],
        "allow_unknown_models": allow_unknown,
    }
    data: dict[str, Any] = client.put("/api/orgs/defaults", body)
    return data
