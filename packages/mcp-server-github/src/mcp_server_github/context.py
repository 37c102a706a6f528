"""Context: who the token belongs to, and the discovery tools that switch toolsets on at run time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_server_core import Toolset
from mcp_server_core.protocol.toolsets import add_discovery

from mcp_server_github.client import GitHubApi
from mcp_server_github.shapes import said, untrusted

if TYPE_CHECKING:
    from mcp_server_core import ReferenceServer


class ServerRef:
    """The server these tools switch toolsets on; set once it is built (its toolsets include this one)."""

    server: ReferenceServer | None = None

    def __init__(self, *, read_only: bool = False) -> None:
        self.read_only = read_only
        """Whether writes are off: known before the server exists, and on the command line, where none does."""

    def get(self) -> ReferenceServer:
        if self.server is None:
            raise RuntimeError("the server is not built yet")
        return self.server


def context_toolset(api: GitHubApi, ref: ServerRef) -> Toolset:
    toolset = Toolset("context", "Who the token belongs to; list and enable toolsets")

    # Plain-text results: three short facts need no outputSchema in every tools/list.
    @toolset.tool(title="Get me", read_only=True, open_world=True)
    def get_me() -> str:
        """Use first to learn which GitHub account, scopes and repositories this server works with."""
        lines = []
        if api.authenticated:
            response = api.request("GET", "/user", what="the authenticated user")
            user = response.data
            name = untrusted(user, "name")
            lines.append(f"Signed in as {said(untrusted(user, 'login'))}" + (f" ({name})" if name else ""))
            scopes = response.headers.get("x-oauth-scopes")
            if scopes is not None:
                lines.append(f"token scopes: {said(scopes, 'none listed')}")
            remaining = response.headers.get("x-ratelimit-remaining")
            if remaining is not None:
                lines.append(f"requests left this hour: {said(remaining)}")
        else:
            lines.append("Not authenticated: public data only, 60 requests an hour. Set GITHUB_TOKEN for more.")
        lines.append(f"repositories: {', '.join(api.allow.entries)} only" if api.allow else "repositories: any")
        lines.append("read-only: no tool writes" if ref.read_only else _writes(api))
        return "\n".join(lines)

    add_discovery(toolset, ref.get)
    return toolset


def _writes(api: GitHubApi) -> str:
    if api.per_caller:
        from mcp_server_core.auth.upstream import caller_can_write

        if caller_can_write("github") is False:
            return "writes: not with this token (its scopes name neither repo nor public_repo)"
    return "writes: available"
