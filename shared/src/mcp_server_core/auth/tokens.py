"""Who may call a server over HTTP: static bearer tokens, JWTs signed by a configured key, or both.

- Static tokens (`<PREFIX>AUTH_TOKEN`, `--auth-token-file`) are compared in constant time against every
  configured token, so timing says nothing about which one matched. The file is read again when it changes, so
  a token removed from it is revoked without a restart.
- JWTs are verified by fastmcp's `JWTVerifier` against a PEM public key file or a JWKS file (re-read when a
  token names a key id it does not hold yet, so keys rotate without a restart). `iss` must be the configured
  issuer; `aud` must be the configured audience, by default this server's own resource URL (MCP
  authorization: a server accepts only tokens issued for it, RFC 8707).
- With an issuer configured, the server publishes OAuth 2.0 Protected Resource Metadata (RFC 9728) at
  `/.well-known/oauth-protected-resource<path>` and at the root well-known URI, and every 401 carries
  `WWW-Authenticate: Bearer resource_metadata="..."` pointing at it, as the MCP authorization spec asks.
- Tokens are never logged: each static token is registered with `redact()`, and no code here logs a JWT.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from fastmcp.server.auth import AccessToken, AuthProvider, RemoteAuthProvider, TokenVerifier
from fastmcp.server.auth.providers.jwt import JWTVerifier
from mcp.server.auth.routes import create_protected_resource_routes
from pydantic import AnyHttpUrl
from starlette.routing import Route

from mcp_server_core.auth.identity import principal, token_fingerprint
from mcp_server_core.conventions.errors import register_secret
from mcp_server_core.conventions.settings import ServerSettings

__all__ = [
    "AnyOf",
    "BearerTokens",
    "JwksFileVerifier",
    "KeyFileVerifier",
    "auth_provider",
    "principal",
    "resource_url",
    "token_fingerprint",
]

logger = logging.getLogger(__name__)


class BearerTokens(TokenVerifier):
    """Static bearer tokens, compared in constant time; each token is its own principal (its fingerprint).

    With `reread` and its `watched` file, the tokens are read again as soon as the file changes (checked at most
    every second, at a request): a leaked token removed from the file stops working within seconds, its open
    sessions with it, as a key removed from the JWKS file does. An edit that cannot be read or holds a token too
    short to be a secret keeps the tokens from before it, and the log says why.
    """

    def __init__(
        self,
        tokens: list[str],
        *,
        scopes: list[str] | None = None,
        reread: Callable[[], list[str]] | None = None,
        watched: Path | None = None,
    ) -> None:
        super().__init__()
        # A static token is the operator's own credential: it carries whatever scopes the server requires.
        self._scopes = list(scopes or [])
        self._use(tokens)
        self._reread = reread
        self._watch = _FileWatch(watched) if watched is not None else None

    def _use(self, tokens: list[str]) -> None:
        for token in tokens:
            register_secret(token)
        self._tokens = [token.encode() for token in tokens]

    def _reread_if_changed(self) -> None:
        if self._reread is None or self._watch is None or not self._watch.changed():
            return
        try:
            tokens = self._reread()
        except (OSError, ValueError) as exc:
            logger.warning(
                "token file %s changed but was not reloaded, its tokens before stay: %s", self._watch.path, exc
            )
            return
        self._use(tokens)
        logger.info("token file %s reloaded: %d tokens", self._watch.path, len(tokens))

    async def verify_token(self, token: str) -> AccessToken | None:
        self._reread_if_changed()
        offered = token.encode()
        # Compare against every token, even after a match, so timing says nothing about which one matched.
        matched = False
        for known in self._tokens:
            matched |= hmac.compare_digest(offered, known)
        if not matched:
            return None
        # A session belongs to the credential that opened it (the SDK compares client ids): one per token.
        return AccessToken(token=token, client_id=token_fingerprint(token), scopes=self._scopes)


class _FileWatch:
    """Whether a small file (tokens, a key set) changed since last asked, looked at most every `RECHECK_S`.

    Content, not size and mtime, is compared: a same-size edit within the file system's time granularity is
    still seen.
    """

    RECHECK_S = 1.0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = self._read()
        self._checked = time.monotonic()

    def _read(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def changed(self) -> bool:
        now = time.monotonic()
        if now - self._checked < self.RECHECK_S:
            return False
        self._checked = now
        seen = self._read()
        if seen == self._seen:
            return False
        self._seen = seen
        return True


class _BoundedLifetime(JWTVerifier):
    """JWTs must carry `exp`, and live no longer than `max_lifetime_s` (RFC 8725 3.10: short-lived tokens)."""

    max_lifetime_s: float = 86_400.0

    async def load_access_token(self, token: str) -> AccessToken | None:
        accepted = await super().load_access_token(token)
        if accepted is None:
            return None
        claims = accepted.claims or {}
        expires, issued = claims.get("exp"), claims.get("iat")
        if not isinstance(expires, int | float):
            logger.warning("Bearer token rejected for client %s: no exp claim", accepted.client_id)
            return None
        # Counted from `iat` or from now, whichever is earlier: an `iat` in the future (a year ahead, `exp` a minute
        # after it) made a token good for a year look a minute long.
        now = time.time()
        start = min(issued, now) if isinstance(issued, int | float) else now
        if expires - start > self.max_lifetime_s:
            logger.warning(
                "Bearer token rejected for client %s: lifetime %.0f s is over the %.0f s allowed",
                accepted.client_id,
                expires - start,
                self.max_lifetime_s,
            )
            return None
        return accepted


class KeyFileVerifier(_BoundedLifetime):
    """JWTs signed by one PEM public key."""


class JwksFileVerifier(_BoundedLifetime):
    """fastmcp's JWT verification, with the key set read from a local JWKS file instead of fetched over HTTP.

    The file is read again as soon as it changes (checked at most every second, at a request): a key removed
    to revoke it stops verifying within seconds, not only when some token names a key id the cache lacks.
    """

    def __init__(self, jwks_file: Path, **options: Any) -> None:
        # The URI only tells JWTVerifier that keys come from a key set; `_fetch_jwks` below reads the file.
        super().__init__(jwks_uri=jwks_file.resolve().as_uri(), jwks_refresh_interval=1.0, **options)
        self._jwks_file = jwks_file
        _read_jwks(jwks_file)  # fail at start, not at the first request, when the file is missing or broken
        self._watch = _FileWatch(jwks_file)

    async def _get_verification_key(self, token: str) -> str | bytes:
        if self._watch.changed():
            self._jwks_cache, self._jwks_cache_time = {}, 0  # fastmcp's cache: read the file again now
            self._jwks_last_refresh_attempt = None
        key: str | bytes = await super()._get_verification_key(token)
        return key

    async def _fetch_jwks(self) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(_read_jwks, self._jwks_file)


def _read_jwks(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the JWKS file {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ValueError(f"the JWKS file {path} is not a JSON Web Key Set (an object with a 'keys' list)")
    return data


class AnyOf(TokenVerifier):
    """Accepts a token any of `verifiers` accepts (static tokens for scripts, JWTs for people), in order.

    The required scopes are checked after it, by the endpoint (the SDK's RequireAuthMiddleware), so a valid token
    without them gets 403 `insufficient_scope` naming the scope, not 401 `invalid_token` (RFC 6750 3.1).
    """

    def __init__(self, verifiers: list[TokenVerifier], *, required_scopes: list[str] | None = None) -> None:
        super().__init__(required_scopes=required_scopes)
        self.verifiers = verifiers

    async def verify_token(self, token: str) -> AccessToken | None:
        for verifier in self.verifiers:
            if (accepted := await verifier.verify_token(token)) is not None:
                return accepted
        return None


class _ProtectedResource(RemoteAuthProvider):
    """RFC 9728 metadata at the path-suffixed URI and at the root one, which clients also try (MCP spec)."""

    def get_routes(self, mcp_path: str | None = None) -> list[Route]:
        routes = super().get_routes(mcp_path)
        resource = self._get_resource_url(mcp_path)
        if resource is not None and mcp_path not in (None, "", "/"):
            root = create_protected_resource_routes(
                resource_url=resource,
                authorization_servers=self.authorization_servers,
                scopes_supported=self.scopes_supported,
            )
            routes += [
                Route("/.well-known/oauth-protected-resource", endpoint=r.endpoint, methods=["GET", "OPTIONS"])
                for r in root
            ]
        return routes


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def base_url(settings: ServerSettings) -> str:
    if settings.public_url:
        return settings.public_url
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    return f"http://{host}:{settings.port}"


def resource_url(settings: ServerSettings) -> str:
    """The MCP endpoint's canonical URL: what JWTs must name as their audience unless told otherwise."""
    return base_url(settings).rstrip("/") + settings.path


def _jwt_verifier(settings: ServerSettings) -> JWTVerifier | None:
    # No required_scopes here: a verifier that checks them answers a valid token without them as invalid (401);
    # the endpoint checks them instead and answers 403 insufficient_scope (see AnyOf).
    options: dict[str, Any] = {
        "issuer": settings.jwt_issuer,
        "audience": settings.jwt_audience or resource_url(settings),
        "algorithm": settings.jwt_algorithm,
    }
    has_key = settings.jwks_file is not None or settings.jwt_public_key_file is not None
    if has_key and not is_loopback_host(settings.host) and not (settings.public_url or settings.jwt_audience):
        raise ValueError(
            f"JWTs are verified for an audience, by default this server's URL, and bound to {settings.host} it "
            "cannot know the URL clients reach it at: give --public-url https://your.host (or --jwt-audience)"
        )
    verifier: _BoundedLifetime
    if settings.jwks_file is not None:
        verifier = JwksFileVerifier(settings.jwks_file, **options)
        verifier.max_lifetime_s = settings.jwt_max_lifetime_s
        return verifier
    if settings.jwt_public_key_file is not None:
        try:
            key = settings.jwt_public_key_file.read_text()
        except OSError as exc:
            raise ValueError(f"cannot read the JWT public key file: {exc}") from None
        if "PUBLIC KEY" not in key and "CERTIFICATE" not in key:
            raise ValueError(f"{settings.jwt_public_key_file} holds no PEM public key")
        verifier = KeyFileVerifier(public_key=key, **options)
        verifier.max_lifetime_s = settings.jwt_max_lifetime_s
        return verifier
    return None


def auth_provider(settings: ServerSettings) -> AuthProvider | None:
    """What checks HTTP clients' bearer tokens under `settings`; None when no token of any kind is configured."""
    verifiers: list[TokenVerifier] = []
    if tokens := settings.bearer_tokens():
        verifiers.append(
            BearerTokens(
                tokens,
                scopes=settings.jwt_required_scopes,
                reread=settings.bearer_tokens,
                watched=settings.auth_token_file,
            )
        )
    jwt = _jwt_verifier(settings)
    if jwt is not None:
        verifiers.append(jwt)
    if not verifiers:
        return None
    verifier = AnyOf(verifiers, required_scopes=settings.jwt_required_scopes or None)
    if jwt is None or not settings.jwt_issuer:
        return verifier
    try:
        issuer = AnyHttpUrl(settings.jwt_issuer)
    except ValueError:
        logger.warning("jwt_issuer %r is not a URL: no protected resource metadata is published", settings.jwt_issuer)
        return verifier
    return _ProtectedResource(
        token_verifier=verifier,
        authorization_servers=[issuer],
        base_url=base_url(settings),
        scopes_supported=settings.jwt_required_scopes or None,
        required_scopes=settings.jwt_required_scopes or None,
    )
