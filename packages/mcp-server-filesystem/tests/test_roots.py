"""MCP Roots narrow the command-line directories, never widen them (unless --allow-roots-outside says so)."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_server_core.testing import StdioWire, python_module, spawn_http_server
from mcp_server_filesystem.roots import narrow_roots


@pytest.fixture
def tree(root: Path, outside: Path) -> dict[str, Path]:
    (root / "project").mkdir()
    (root / "project" / "main.py").write_text("print('in project')\n")
    (root / "other").mkdir()
    (root / "other" / "x.txt").write_text("in other\n")
    return {"root": root, "project": root / "project", "other": root / "other", "outside": outside}


def legacy_client(server: Any, roots: list[str]) -> Client[Any]:
    return Client(server, mode="legacy", roots=roots)


async def test_a_client_root_inside_narrows_to_it(make_server: Any, call: Any, tree: dict[str, Path]) -> None:
    async with legacy_client(make_server(tree["root"]), [tree["project"].as_uri()]) as client:
        failed, text = await call(client, "read_file", path="main.py")  # relative to the client's first root
        assert not failed
        assert "in project" in text
        failed, text = await call(client, "read_file", path=str(tree["other"] / "x.txt"))
        assert failed
        assert "outside the allowed roots" in text
        assert str(tree["project"]) in text
        failed, text = await call(client, "show_tree")
        assert text.startswith(f"{tree['project']}/")


async def test_a_client_root_containing_the_directory_narrows_to_the_directory(
    make_server: Any, call: Any, tree: dict[str, Path]
) -> None:
    async with legacy_client(make_server(tree["project"]), [tree["root"].as_uri()]) as client:
        failed, _ = await call(client, "read_file", path="main.py")
        assert not failed
        failed, _ = await call(client, "read_file", path=str(tree["other"] / "x.txt"))
        assert failed, "a wider client root must not widen the command-line directory"


async def test_client_roots_outside_are_ignored_and_never_widen(
    make_server: Any, call: Any, tree: dict[str, Path]
) -> None:
    roots = [tree["outside"].as_uri(), tree["project"].as_uri(), "file:///no/such/directory"]
    async with legacy_client(make_server(tree["root"]), roots) as client:
        failed, text = await call(client, "read_file", path=str(tree["outside"] / "secret.txt"))
        assert failed
        assert "TOP SECRET" not in text
        failed, _ = await call(client, "read_file", path=str(tree["project"] / "main.py"))
        assert not failed


async def test_client_roots_all_outside_leave_nothing_allowed_and_say_why(
    make_server: Any, call: Any, tree: dict[str, Path]
) -> None:
    async with legacy_client(make_server(tree["root"]), [tree["outside"].as_uri()]) as client:
        failed, text = await call(client, "read_file", path="notes.txt")
        assert failed
        assert "--allow-roots-outside" in text
        assert str(tree["outside"]) in text


async def test_allow_roots_outside_lets_client_roots_stand(make_server: Any, call: Any, tree: dict[str, Path]) -> None:
    server = make_server(tree["root"], allow_roots_outside=True)
    async with legacy_client(server, [tree["outside"].as_uri()]) as client:
        failed, text = await call(client, "read_file", path="secret.txt")
        assert not failed
        assert "TOP SECRET" in text
        failed, _ = await call(client, "read_file", path=str(tree["root"] / "notes.txt"))
        assert failed, "with client roots given, only they are allowed"


async def test_allow_roots_outside_can_start_with_no_directory_and_take_the_clients(
    make_server: Any, call: Any, tree: dict[str, Path]
) -> None:
    server = make_server(allow_roots_outside=True)
    async with Client(server, mode="legacy") as client:
        failed, text = await call(client, "show_tree")
        assert failed
        assert "connect a client that sends roots" in text
    async with legacy_client(server, [tree["project"].as_uri()]) as client:
        failed, text = await call(client, "read_file", path="main.py")
        assert not failed
        assert "in project" in text


async def test_a_client_without_roots_keeps_the_command_line(
    make_server: Any, call: Any, tree: dict[str, Path]
) -> None:
    async with Client(make_server(tree["root"]), mode="legacy") as client:
        failed, _ = await call(client, "read_file", path="other/x.txt")
        assert not failed
    async with legacy_client(make_server(tree["root"]), []) as client:
        failed, _ = await call(client, "read_file", path="other/x.txt")
        assert not failed, "an empty roots list expresses no preference"


async def test_roots_list_changed_makes_the_server_ask_again(
    make_server: Any, call: Any, tree: dict[str, Path]
) -> None:
    current = [tree["project"].as_uri()]

    def roots(_context: Any) -> list[str]:
        return current

    async with legacy_client(make_server(tree["root"]), roots) as client:  # type: ignore[arg-type]
        failed, _ = await call(client, "read_file", path="main.py")
        assert not failed
        current[:] = [tree["other"].as_uri()]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # current in this client's era
            await client.send_roots_list_changed()
        failed, text = await call(client, "read_file", path="x.txt")
        assert not failed, text
        assert "in other" in text
        failed, _ = await call(client, "read_file", path=str(tree["project"] / "main.py"))
        assert failed


async def test_the_server_asks_once_until_the_roots_change(make_server: Any, call: Any, tree: dict[str, Path]) -> None:
    asked = 0

    def roots(_context: Any) -> list[str]:
        nonlocal asked
        asked += 1
        return [tree["project"].as_uri()]

    async with legacy_client(make_server(tree["root"]), roots) as client:  # type: ignore[arg-type]
        for _ in range(3):
            await call(client, "read_file", path="main.py")
    assert asked == 1


async def test_modern_clients_keep_the_command_line(make_server: Any, call: Any, tree: dict[str, Path]) -> None:
    async with Client(make_server(tree["root"]), mode="2026-07-28") as client:
        failed, _ = await call(client, "read_file", path="other/x.txt")
        assert not failed


async def test_resources_follow_the_session_roots(make_server: Any, tree: dict[str, Path]) -> None:
    async with legacy_client(make_server(tree["root"]), [tree["project"].as_uri()]) as client:
        names = [r.name for r in await client.list_resources()]
    assert names == ["project/main.py"]


def test_narrowing_policy_table() -> None:
    allowed = ("/srv/a", "/srv/b")
    assert narrow_roots(allowed, ["/srv/a/x"], allow_outside=False) == ["/srv/a/x"]
    assert narrow_roots(allowed, ["/srv"], allow_outside=False) == ["/srv/a", "/srv/b"]
    assert narrow_roots(allowed, ["/srv/a_evil", "/etc"], allow_outside=False) == []
    assert narrow_roots(allowed, ["/srv/b", "/srv/b/deep"], allow_outside=False) == ["/srv/b", "/srv/b/deep"]
    assert narrow_roots(allowed, ["/etc"], allow_outside=True) == ["/etc"]


def test_roots_are_asked_on_the_request_stream_over_http(tmp_path: Path) -> None:
    """Over Streamable HTTP the server asks roots/list inside the tool call's own response stream."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "main.py").write_text("print('in project')\n")
    (tmp_path / "other.txt").write_text("outside the client's root\n")

    async def scenario(url: str) -> tuple[str, str]:
        async with Client(url, mode="legacy", roots=[(tmp_path / "project").as_uri()]) as client:
            inside = await client.call_tool_mcp("read_file", {"path": "main.py"})
            elsewhere = await client.call_tool_mcp("read_file", {"path": str(tmp_path / "other.txt")})
        return _text(inside), ("error: " if elsewhere.is_error else "") + _text(elsewhere)

    argv = python_module("mcp_server_filesystem", str(tmp_path), "--no-watch")
    with spawn_http_server(argv) as (url, _process):
        inside, elsewhere = asyncio.run(scenario(url))
    assert inside.endswith("```text\nprint('in project')\n```")
    assert elsewhere.startswith("error: ")
    assert "outside the allowed roots" in elsewhere


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_over_stdio_the_server_asks_roots_list_and_narrows(tmp_path: Path) -> None:
    """The raw exchange: a tools/call, the server's roots/list request on the wire, the answer, the result."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "main.py").write_text("print('in project')\n")
    (tmp_path / "other.txt").write_text("x\n")
    with StdioWire(python_module("mcp_server_filesystem", str(tmp_path), "--no-watch")) as wire:
        wire.initialize(capabilities={"roots": {"listChanged": True}})
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": "call-1",
                "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": str(tmp_path / "other.txt")}},
            }
        )
        asked = wire.receive()
        assert asked["method"] == "roots/list"
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {"roots": [{"uri": (tmp_path / "project").as_uri(), "name": "project"}]},
            }
        )
        answer = wire.response_to("call-1")
        assert answer["result"]["isError"] is True
        assert str(tmp_path / "project") in answer["result"]["content"][0]["text"]
        inside = wire.request("tools/call", {"name": "read_file", "arguments": {"path": "main.py"}})
        assert inside["result"]["content"][0]["text"].endswith("```text\nprint('in project')\n```")
        assert wire.close() == 0
