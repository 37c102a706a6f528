"""PyGithub and its HTTP stack load at the first request to GitHub, not when the server starts (issue 15)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from fake_github import TOKEN, FakeGitHub

# In a fresh interpreter (this one has PyGithub loaded by other tests): the server starts with its default
# toolsets, lists its tools and refuses a malformed call, then makes one real call; the modules loaded are printed
# after each step. (With every toolset on, fastmcp's first tools/list loads requests itself, through jsonref, to
# inline the nested models of review_pull_request and push_files; PyGithub still waits for a request.)
SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from fastmcp import Client
    from mcp_server_github.server import build_server
    from mcp_server_github.settings import GitHubSettings

    def loaded():
        return sorted({name.split(".")[0] for name in sys.modules} & {"github", "requests", "urllib3"})

    async def main():
        server = build_server(GitHubSettings(token=sys.argv[2], api_url=sys.argv[1]))
        async with Client(server) as client:
            await client.list_tools()
            await client.call_tool_mcp("get_issue", {"repo": "widgets", "number": 1})
            print(loaded())
            await client.call_tool("get_me", {})
            print(loaded())

    asyncio.run(main())
    """
)


def test_pygithub_is_imported_at_the_first_request_not_at_start(fake: FakeGitHub) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, fake.url, TOKEN], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[]", "['github', 'requests', 'urllib3']"]
