"""What the family's command line knows of this server: settings, arguments, how to build it (imported only
when serving) and its toolsets alone, for the command-line track, which never imports fastmcp."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mcp_server_core import ServerSpec, Toolset
from mcp_server_core.tracks.cli import add_upstream_identity_arguments

from mcp_server_github.settings import GitHubSettings

if TYPE_CHECKING:
    from mcp_server_github.client import GitHubApi
    from mcp_server_github.context import ServerRef


def github_toolsets(api: GitHubApi, ref: ServerRef) -> list[Toolset]:
    """The six toolsets, the same on both tracks."""
    from mcp_server_github.actions import actions_toolset
    from mcp_server_github.context import context_toolset
    from mcp_server_github.issues import issues_toolset
    from mcp_server_github.lockdown import Lockdown
    from mcp_server_github.pulls import pulls_toolset
    from mcp_server_github.repos import repos_toolset
    from mcp_server_github.search import search_toolset

    lockdown = Lockdown(api, enabled=api.settings.lockdown)
    return [
        context_toolset(api, ref),
        issues_toolset(api, lockdown),
        pulls_toolset(api, lockdown),
        repos_toolset(api),
        search_toolset(api),
        actions_toolset(api, lockdown),
    ]


@contextmanager
def toolsets(settings: GitHubSettings) -> Iterator[Sequence[Toolset]]:
    from mcp_server_github.client import GitHubApi
    from mcp_server_github.context import ServerRef

    api = GitHubApi(settings)
    try:
        yield github_toolsets(api, ServerRef(read_only=settings.read_only))
    finally:
        api.close()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-url", help="REST API root (default https://api.github.com; Enterprise: https://HOST/api/v3)"
    )
    parser.add_argument("--repos", help="allow-list: owner/name or owner/*, comma-separated (default: any repository)")
    parser.add_argument(
        "--lockdown",
        action="store_const",
        const=True,
        help="in public repositories, withhold what authors without push access wrote (issues, PRs, comments)",
    )
    add_upstream_identity_arguments(parser)
    parser.add_argument(
        "--web-url", help="with --upstream-identity oauth: GitHub's sign-in host (default: from API URL)"
    )


SPEC = ServerSpec(
    distribution="mcp-server-github",
    summary="GitHub over MCP through PyGithub: small context, untrusted content fenced, repository allow-list.",
    settings=GitHubSettings,
    build="mcp_server_github.server:build_server",
    toolsets=toolsets,
    skill="Use to read and change GitHub issues, pull requests, files and CI runs from a shell (GITHUB_TOKEN).",
    add_arguments=add_arguments,
    # Without a token only public data is readable, at 60 requests an hour: the snippet asks for one.
    host_env=lambda _settings: {"GITHUB_TOKEN": "your-github-token"},
)
