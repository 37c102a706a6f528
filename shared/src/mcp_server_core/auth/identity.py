"""Who is calling: the one definition sessions, per-client limits, audit lines and metrics key on.

Kept apart from auth.py, which imports the JWT machinery: every call asks this, stdio ones too.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastmcp.server.auth import AccessToken

__all__ = ["caller", "principal", "token_fingerprint"]


def token_fingerprint(token: str) -> str:
    """Who a static token is, without being it."""
    # Not "token:<hex>": the redactor masks anything shaped "token: value", and audit lines must tell callers apart.
    return "token-sha256:" + hashlib.sha256(token.encode()).hexdigest()[:16]


def principal(token: AccessToken | None) -> str:
    """A static token's fingerprint, a JWT's client and subject, or `local` (stdio, or HTTP without auth, where
    one operator is every client)."""
    if token is None:
        return "local"
    subject = token.subject or (token.claims or {}).get("sub")
    return f"{token.client_id}/{subject}" if subject else token.client_id


def caller() -> str:
    """The principal of the request being served now."""
    from fastmcp.server.dependencies import get_access_token

    return principal(get_access_token())
