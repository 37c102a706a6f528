"""Each HTTP caller acts on Slack as themselves (`--upstream-identity per-user-token` or `oauth`): their own user
token, verified by `auth.test`, their own directory of names, and the same write allow-list as everyone.

The bot token stays the default (`single`): every caller then acts as the bot.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_server_slack.settings import USER_PREFIXES, SlackSettings

if TYPE_CHECKING:
    from fastmcp.server.auth import AuthProvider
    from mcp_server_core.auth.upstream import UpstreamIdentity

    from mcp_server_slack.api import SlackApi
    from mcp_server_slack.directory import Directory

WRITE_SCOPES = frozenset({"chat:write", "reactions:write"})
"""A user token with neither scope cannot post or react: the write tools are not offered to its caller."""
REJECTED = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"})
"""auth.test's verdicts on the token itself; any other failure says nothing about it (ask again next time)."""
DEFAULT_USER_SCOPES: tuple[str, ...] = (
    *("channels:history", "channels:read", "groups:history", "groups:read", "users:read", "search:read"),
    *("chat:write", "reactions:write"),
)
"""What a sign-in asks of Slack unless --oauth-scope says otherwise: reading, searching, and posting where the
write allow-list lets the server post."""
CALLER_DIRECTORIES = 16
"""Callers whose directory of names is kept at once, most recent first (each up to --max-cached users and
channels; a caller who comes back lists them again)."""


def whois(api: SlackApi, token: str) -> UpstreamIdentity | None:
    """Who Slack says a user token belongs to (`auth.test`, one request) and whether it may write (its
    X-OAuth-Scopes); None when Slack rejects it. A bot token is no caller's own identity: refused unasked."""
    from fastmcp.server.auth import TokenVerificationError
    from mcp_server_core.auth.upstream import UpstreamIdentity
    from mcp_server_core.conventions.errors import ToolFailure

    if not token.startswith(USER_PREFIXES):
        return None
    try:
        data, headers = api.test_token(token, tolerate=REJECTED)
    except ToolFailure as exc:
        raise TokenVerificationError(str(exc)) from None
    if not data.get("ok", True) or not data.get("user_id"):
        if data.get("error") in REJECTED:
            return None
        raise TokenVerificationError("auth.test named no user")
    listed = {str(k).lower(): str(v) for k, v in headers.items()}.get("x-oauth-scopes")
    scopes = tuple(s.strip() for s in listed.split(",") if s.strip()) if listed is not None else ()
    can_write = listed is None or bool(WRITE_SCOPES & set(scopes))
    return UpstreamIdentity(account=f"{data.get('team_id', '')}/{data['user_id']}", can_write=can_write, scopes=scopes)


def caller_auth(api: SlackApi, settings: SlackSettings) -> AuthProvider:
    """How callers prove who they are on Slack: their user token as the bearer, or a sign-in the server brokers."""
    import anyio
    from mcp_server_core.auth.upstream import UpstreamTokenVerifier

    settings.check_serving()

    async def check(token: str) -> UpstreamIdentity | None:
        return await anyio.to_thread.run_sync(whois, api, token)

    verifier = UpstreamTokenVerifier(
        "slack", check, ttl_s=settings.identity_ttl_s, max_entries=settings.identity_cache_size
    )
    if settings.upstream_identity == "per-user-token":
        return verifier
    return slack_sign_in(verifier, settings)


def slack_sign_in(verifier: Any, settings: SlackSettings) -> AuthProvider:
    """fastmcp's OAuth proxy in front of Slack's OAuth v2 (`/oauth/v2/authorize` with `user_scope`,
    `oauth.v2.access`). Slack puts a user token at `authed_user.access_token`, not where OAuth 2.0 puts it (the
    top-level `access_token` is the bot's, absent when only user scopes are asked): the proxy's upstream client,
    which fastmcp lets a subclass replace for such providers, moves it there before the proxy reads it."""
    from fastmcp.server.auth.oauth_proxy.upstream import AsyncOAuth2Client
    from key_value.aio.stores.memory import MemoryStore
    from mcp_server_core.auth.tokens import base_url
    from mcp_server_core.auth.upstream import UpstreamOAuthProxy

    if settings.oauth_client_id is None or settings.oauth_client_secret is None:
        raise ValueError("--upstream-identity oauth needs the Slack app's client id and client secret")

    class SlackTokenClient(AsyncOAuth2Client):
        async def fetch_token(self, url: str, *, grant_type: str = "authorization_code", **params: Any) -> Any:
            return user_token_answer(await super().fetch_token(url, grant_type=grant_type, **params))

        async def refresh_token(self, url: str, *, refresh_token: str | None = None, **params: Any) -> Any:
            return user_token_answer(await super().refresh_token(url, refresh_token=refresh_token, **params))

    class SlackOAuthProxy(UpstreamOAuthProxy):
        def _create_upstream_oauth_client(self) -> AsyncOAuth2Client:
            plain = super()._create_upstream_oauth_client()
            return SlackTokenClient(
                plain.client_id, plain.client_secret, plain.token_endpoint_auth_method, plain._client.timeout.read
            )

    web = settings.api_url.rstrip("/").removesuffix("/api")
    return SlackOAuthProxy(
        upstream_authorization_endpoint=f"{web}/oauth/v2/authorize",
        upstream_token_endpoint=settings.api_url + "oauth.v2.access",
        upstream_client_id=settings.oauth_client_id,
        upstream_client_secret=settings.oauth_client_secret.get_secret_value(),
        token_verifier=verifier,
        base_url=base_url(settings),
        # Slack documents client_id and client_secret as form fields of oauth.v2.access (or HTTP Basic).
        token_endpoint_auth_method="client_secret_post",  # noqa: S106 - a method's name, not a secret
        # User scopes only: the token is the user's; no bot scope is asked, so no bot is installed by a sign-in.
        extra_authorize_params={"user_scope": ",".join(settings.oauth_scopes or DEFAULT_USER_SCOPES)},
        client_storage=MemoryStore(max_entries_per_collection=4 * settings.identity_cache_size),
    )


def user_token_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """oauth.v2.access's answer as OAuth 2.0 shapes it: the user's token, scope and lifetime at the top."""
    user = answer.get("authed_user")
    if not isinstance(user, dict) or not user.get("access_token"):
        return answer
    fixed: dict[str, Any] = {"access_token": user["access_token"], "token_type": "Bearer", "scope": user.get("scope")}
    for field in ("refresh_token", "expires_in"):
        if field in user:
            fixed[field] = user[field]
    if "expires_in" in user:
        fixed["expires_at"] = int(time.time()) + int(user["expires_in"])
    return fixed


class CallerDirectories:
    """Stands in for the `Directory`: each caller's own (a private channel one user sees is no other's to name,
    and two callers may be in two workspaces), the most recent `CALLER_DIRECTORIES` kept; requests without a
    caller's token (none in this mode) use the server's."""

    def __init__(self, make: Callable[[], Directory], own: Directory) -> None:
        self._make = make
        self._own = own
        self._each: OrderedDict[bytes, Directory] = OrderedDict()
        self._lock = threading.Lock()

    def current(self) -> Directory:
        from mcp_server_core.auth.upstream import caller_upstream_token

        token = caller_upstream_token("slack")
        if token is None:
            return self._own
        key = hashlib.sha256(token.encode()).digest()
        with self._lock:
            directory = self._each.get(key)
            if directory is None:
                directory = self._each[key] = self._make()
                while len(self._each) > CALLER_DIRECTORIES:
                    self._each.popitem(last=False)
            self._each.move_to_end(key)
            return directory

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)
