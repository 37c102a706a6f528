"""Streamable HTTP: loopback by default, Origin and Host checked, bearer tokens required beyond loopback.

- Host and Origin are validated on every request (DNS-rebinding protection, spec "Security Warning" of the
  Streamable HTTP transport): loopback names always pass, others only when listed in `allowed_hosts` /
  `allowed_origins`.
- Bound to anything but loopback, the server refuses to start without a bearer token; tokens are compared in
  constant time and never logged.
- `stateless` serves every POST on its own, with no session, so several workers can share a port.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging

from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.applications import Starlette

from mcp_server_core.errors import register_secret
from mcp_server_core.server import ReferenceServer
from mcp_server_core.settings import ServerSettings

__all__ = ["BearerTokens", "build_http_app", "is_loopback"]

logger = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerTokens(TokenVerifier):
    """Static bearer tokens, compared in constant time."""

    def __init__(self, tokens: list[str]) -> None:
        super().__init__()
        self._tokens = [token.encode() for token in tokens]
        for token in tokens:
            register_secret(token)

    async def verify_token(self, token: str) -> AccessToken | None:
        offered = token.encode()
        # Compare against every token, even after a match, so timing says nothing about which one matched.
        matched = False
        for known in self._tokens:
            matched |= hmac.compare_digest(offered, known)
        if not matched:
            return None
        return AccessToken(token=token, client_id="bearer", scopes=[])


def build_http_app(server: ReferenceServer, settings: ServerSettings) -> Starlette:
    """The ASGI app serving `server` at `settings.path`; raises ValueError for an unsafe configuration."""
    tokens = settings.bearer_tokens()
    if not is_loopback(settings.host) and not tokens:
        raise ValueError(
            f"refusing to serve HTTP on {settings.host} without a bearer token: anyone who can reach the port "
            "could call every tool. Set an auth token (see --help), or bind to 127.0.0.1."
        )
    if tokens:
        server.auth = BearerTokens(tokens)
    return server.http_app(
        path=settings.path,
        stateless_http=settings.stateless,
        # A stateless POST has no standalone stream to come back on: answer in the response body.
        json_response=settings.stateless,
        host_origin_protection=True,
        allowed_hosts=settings.allowed_hosts or None,
        allowed_origins=settings.allowed_origins or None,
    )
