"""tools/list is snapshotted: every schema change is a reviewed diff, with its byte count.

Regenerate after a deliberate change with `UPDATE_TOOLS_SNAPSHOT=1 uv run pytest packages/mcp-server-github`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fake_github import FakeGitHub, server_for
from fastmcp import Client
from mcp_server_core.testing import tools_list_bytes

SNAPSHOT = Path(__file__).with_name("tools_list.json")


async def test_tools_list_matches_the_snapshot(fake: FakeGitHub) -> None:
    server = server_for(fake)
    async with Client(server, mode="legacy") as client:
        listed = await client.list_tools_mcp()
    tools = listed.model_dump(by_alias=True, mode="json", exclude_none=True)["tools"]
    current = {
        "bytes_default": await tools_list_bytes(server_for(fake, toolsets=None)),
        "bytes_all": await tools_list_bytes(server),
        "tools": tools,
    }
    text = json.dumps(current, indent=1, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_TOOLS_SNAPSHOT"):
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.read_text() == text, "tools/list changed: review the diff, then regenerate the snapshot"
