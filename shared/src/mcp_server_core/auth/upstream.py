"""When the MCP bearer IS the caller's upstream token (a GitHub token, a Slack user token): each caller acts
upstream as themselves, never as the server's one identity (the confused deputy the MCP authorization spec warns
about).

- `UpstreamTokenVerifier` accepts a bearer by asking the upstream who it belongs to (a callback the server gives:
  GitHub's `GET /user`, Slack's `auth.test`). The verdict is cached by the token's SHA-256, never by the token,
  for `ttl_s`, in at most `max_entries` entries, and one check runs per token at a time: a token costs at most
  one upstream request per TTL however many calls it makes at once. A check that could not reach the upstream
  is not cached (the next request asks again).
- Every token checked is registered with the redactor before the upstream sees it, and forgotten when the cache
  lets it go, so the redactor's set stays as bounded as the cache.
- `caller_upstream_token(upstream)` gives the server's client factory the token of the request being served, and
  only a token this verifier accepted: a JWT from an identity provider or a static bearer token is never an
  upstream credential, so it is never sent upstream (no token passthrough).
- `upstream_allows_writes` is the fastmcp auth check the toolsets put on every tool that writes: a caller whose
  upstream token cannot write does not see those tools in tools/list, and cannot call them. `caller_may_write`
  is the same judgement for the request being served, for what lists tools in words (`list_toolsets`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
from fastmcp.server.auth import AccessToken, TokenVerificationError, TokenVerifier
from fastmcp.server.auth.oauth_proxy import OAuthProxy
from fastmcp.utilities.authorization import AuthContext
from starlette.authentication import AuthenticationError
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, PlainTextResponse, Response

from mcp_server_core.auth.identity import token_fingerprint
from mcp_server_core.conventions.errors import forget_secret, is_registered_secret, register_secret

__all__ = [
    "UpstreamAccessToken",
    "UpstreamCheck",
    "UpstreamIdentity",
    "UpstreamOAuthProxy",
    "UpstreamTokenVerifier",
    "UpstreamUnavailable",
    "caller_can_write",
    "caller_may_write",
    "caller_upstream_token",
    "upstream_allows_writes",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class UpstreamIdentity:
    """What the upstream said of a token: whose it is, and whether it may write."""

    account: str
    """The upstream's name for the account (a GitHub login, a Slack team/user id): the audit line's subject."""
    can_write: bool
    scopes: tuple[str, ...] = ()
    """What the upstream reports the token may do (GitHub's X-OAuth-Scopes), for the AccessToken's scopes."""


class UpstreamAccessToken(AccessToken):
    """An accepted bearer that is the caller's own upstream credential (only `UpstreamTokenVerifier` makes one)."""

    upstream: str
    can_write: bool = True


class UpstreamUnavailable(TokenVerificationError, AuthenticationError):
    """The upstream could not say whether a bearer is good (down, rate-limited): answered 503 with Retry-After,
    not 401, so a host retries instead of asking its user to sign in again. Both fastmcp's verification error
    (the OAuth proxy passes it on) and Starlette's (its auth middleware answers it)."""


UNAVAILABLE_RETRY_S = 5


def _answer_auth_error(connection: HTTPConnection, exc: AuthenticationError) -> Response:
    if isinstance(exc, UpstreamUnavailable):
        body = {"error": "temporarily_unavailable", "error_description": str(exc)}
        return JSONResponse(body, status_code=503, headers={"Retry-After": str(UNAVAILABLE_RETRY_S)})
    return PlainTextResponse(str(exc), status_code=400)  # Starlette's own answer to any other


def _answering_unavailable(middleware: list[Middleware]) -> list[Middleware]:
    """A provider's middleware, its authentication step answering `UpstreamUnavailable` with 503."""
    answering = []
    for m in middleware:
        if m.cls is cast(object, AuthenticationMiddleware):
            backend: Any = m.kwargs["backend"]  # fastmcp's BearerAuthBackend, passed by name
            m = Middleware(AuthenticationMiddleware, backend=backend, on_error=_answer_auth_error)
        answering.append(m)
    return answering


class UpstreamOAuthProxy(OAuthProxy):
    """fastmcp's OAuth proxy whose verifier is an `UpstreamTokenVerifier`: an upstream outage is a 503."""

    def get_middleware(self) -> list[Middleware]:
        return _answering_unavailable(super().get_middleware())


UpstreamCheck = Callable[[str], Awaitable[UpstreamIdentity | None]]
"""Asks the upstream about a token: its identity, None when the upstream rejects it; raises
`fastmcp.server.auth.TokenVerificationError` when the upstream could not say (down, rate-limited)."""


@dataclass
class _Verdict:
    token: str  # kept to forget it from the redactor when the entry goes; never logged
    accepted: UpstreamAccessToken | None
    expires: float
    registered_here: bool
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class UpstreamTokenVerifier(TokenVerifier):
    """Accepts a bearer that `check` says is a live upstream token; see the module's notes for the costs."""

    def __init__(
        self,
        upstream: str,
        check: UpstreamCheck,
        *,
        ttl_s: float = 60.0,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self._clock = clock
        self.upstream = upstream
        self._check = check
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._verdicts: OrderedDict[bytes, _Verdict] = OrderedDict()
        self.checks = 0
        """Upstream checks made so far (tests and the benchmark read it beside the fake's request record)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        key = hashlib.sha256(token.encode()).digest()
        verdict = self._verdicts.get(key)
        if verdict is None:
            # Redacted before the upstream sees it: its answer (or a failure's text) may quote the token.
            registered_here = not is_registered_secret(token)
            register_secret(token)
            verdict = _Verdict(token, None, 0.0, registered_here)
            self._verdicts[key] = verdict
            self._evict()
        self._verdicts.move_to_end(key)
        # One check per token at a time: callers arriving while it runs wait for its verdict instead of asking too.
        async with verdict.lock:
            if verdict.expires > self._clock():
                return verdict.accepted
            self.checks += 1
            try:
                identity = await self._check(token)
            except Exception as exc:
                # Not cached: the upstream could not say, and the next request asks again.
                self._drop(key, verdict)
                logger.warning("%s could not verify the token %s: %s", self.upstream, token_fingerprint(token), exc)
                raise UpstreamUnavailable(
                    f"{self.upstream} could not verify the token just now; retry in a few seconds"
                ) from None
            verdict.accepted = self._accepted(token, identity)
            verdict.expires = self._clock() + self.ttl_s
            if identity is None:
                logger.info("%s rejected the token %s", self.upstream, token_fingerprint(token))
            return verdict.accepted

    def get_middleware(self) -> list[Middleware]:
        return _answering_unavailable(super().get_middleware())

    def _accepted(self, token: str, identity: UpstreamIdentity | None) -> UpstreamAccessToken | None:
        if identity is None:
            return None
        subject = f"{self.upstream}:{identity.account}"
        return UpstreamAccessToken(
            token=token,
            # One client per token, as with static tokens: sessions and per-client limits belong to the credential.
            client_id=token_fingerprint(token),
            scopes=list(identity.scopes),
            subject=subject,
            claims={"sub": subject},
            upstream=self.upstream,
            can_write=identity.can_write,
        )

    def _drop(self, key: bytes, verdict: _Verdict) -> None:
        if self._verdicts.get(key) is verdict:
            del self._verdicts[key]
            self._forget(verdict)

    def _evict(self) -> None:
        # Oldest first, skipping a token whose check is running: its caller still needs it redacted. The cache
        # outgrows its bound only by the checks in flight.
        excess = len(self._verdicts) - self.max_entries
        if excess <= 0:
            return
        for key in [k for k, v in self._verdicts.items() if not v.lock.locked()][:excess]:
            self._forget(self._verdicts.pop(key))

    def _forget(self, verdict: _Verdict) -> None:
        # A token the operator configured (GITHUB_TOKEN given as a bearer too) stays redacted for good.
        if verdict.registered_here:
            forget_secret(verdict.token)


def caller_upstream_token(upstream: str) -> str | None:
    """The upstream token of the request being served, or None when its bearer is no `upstream` token (stdio, a
    static token, a JWT): the server then acts as its own configured identity, or refuses."""
    from fastmcp.server.dependencies import get_access_token

    token = get_access_token()
    if isinstance(token, UpstreamAccessToken) and token.upstream == upstream:
        return token.token
    return None


def caller_can_write(upstream: str) -> bool | None:
    """Whether the caller's own `upstream` token may write, or None when the bearer is no such token."""
    from fastmcp.server.dependencies import get_access_token

    token = get_access_token()
    return token.can_write if isinstance(token, UpstreamAccessToken) and token.upstream == upstream else None


def upstream_allows_writes(context: AuthContext) -> bool:
    """fastmcp auth check for tools that write: hidden from a caller whose upstream token cannot write."""
    return _may_write(context.token)


def caller_may_write() -> bool:
    """`upstream_allows_writes` for the request being served: what a listing of tools in words (`list_toolsets`,
    `enable_toolset`) asks, so it names no tool the caller can neither see nor call."""
    from fastmcp.server.dependencies import get_access_token

    return _may_write(get_access_token())


def _may_write(token: AccessToken | None) -> bool:
    # Any other bearer (none on stdio, a static token, a JWT) is judged by the server's own guards, not here.
    return not isinstance(token, UpstreamAccessToken) or token.can_write
