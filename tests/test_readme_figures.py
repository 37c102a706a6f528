"""Figures the README states are the code's: a figure that drifts from what the servers send fails here.

The README's table gives each server's default tools/list in bytes; they are measured here as the contract suite
measures them (the compact JSON a handshake-era client receives) on each server built with its defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp_server_core.testing import tools_list_bytes

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_ROW = re.compile(r"^\| `packages/(mcp-server-\w+)/` \|.*?tools/list ([\d,]+) bytes", re.M)
# A server's own README: "10 tools, 5,360 bytes of `tools/list`", "**2,972 bytes** of `tools/list`",
# "`tools/list`: 5,544 bytes with the default settings".
_OWN = re.compile(
    r"([\d,]{3,})(?:\*\*)? bytes(?:\*\*)? of `tools/list`|`tools/list`: ([\d,]{3,}) bytes with the default"
)


def _db(tmp: Path) -> Any:
    from mcp_server_db.server import build_server
    from mcp_server_db.settings import DbSettings

    return build_server(DbSettings())


def _filesystem(tmp: Path) -> Any:
    from mcp_server_filesystem.server import build_server
    from mcp_server_filesystem.settings import FilesystemSettings

    return build_server(FilesystemSettings(roots=[tmp], watch=False))


def _github(tmp: Path) -> Any:
    from mcp_server_github.server import build_server
    from mcp_server_github.settings import GitHubSettings

    return build_server(GitHubSettings(token="ghp_" + "0" * 36, api_url="http://127.0.0.1:9"))


def _slack(tmp: Path) -> Any:
    from mcp_server_slack.server import build_server
    from mcp_server_slack.settings import SlackSettings

    return build_server(SlackSettings(bot_token="xoxb-" + "0" * 40))


BUILDERS: dict[str, Callable[[Path], Any]] = {
    "mcp-server-db": _db,
    "mcp-server-filesystem": _filesystem,
    "mcp-server-github": _github,
    "mcp-server-slack": _slack,
}


def _stated() -> dict[str, int]:
    return {name: int(size.replace(",", "")) for name, size in _ROW.findall(README.read_text())}


def test_the_readme_states_a_tools_list_size_for_every_server() -> None:
    assert sorted(_stated()) == sorted(BUILDERS)


@pytest.mark.parametrize("distribution", sorted(BUILDERS))
async def test_the_readme_tools_list_size_is_what_the_server_sends(distribution: str, tmp_path: Path) -> None:
    measured = await tools_list_bytes(BUILDERS[distribution](tmp_path))
    stated = _stated()[distribution]
    assert measured == stated, f"README.md says {distribution}'s tools/list is {stated:,} bytes; it is {measured:,}"
    own = ROOT / "packages" / distribution / "README.md"
    for match in _OWN.finditer(own.read_text()):
        said = int((match.group(1) or match.group(2)).replace(",", ""))
        assert said == measured, f"{own.relative_to(ROOT)} says tools/list is {said:,} bytes; it is {measured:,}"
