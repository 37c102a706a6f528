"""Cross writes: a session that read in one root and writes in another asks its user first (the helpers'
flows.py), through the real protocol; what was written is read from the file tree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import Asked, StdioWire, python_module
from mcp_server_filesystem.resources import file_uri

Make = Callable[..., ReferenceServer]


def two_roots(tmp_path: Path) -> tuple[Path, Path]:
    private, public = tmp_path / "private", tmp_path / "public"
    private.mkdir()
    public.mkdir()
    (private / "keys.txt").write_text("API_KEY=hunter2\n")
    (public / "notes.md").write_text("# Notes\n")
    return private.resolve(), public.resolve()


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def test_reading_one_root_then_writing_another_asks_and_decline_writes_nothing(
    tmp_path: Path, make_server: Make
) -> None:
    private, public = two_roots(tmp_path)
    asked = Asked("decline")
    async with Client(make_server(private, public), elicitation_handler=asked, mode="legacy") as client:
        await client.call_tool("read_file", {"path": str(private / "keys.txt")})
        result = await client.call_tool_mcp("write_file", {"path": str(public / "leak.txt"), "content": "hunter2"})
    assert result.is_error
    assert "declined" in text(result)
    [question] = asked.messages
    assert f"folder {private}" in question
    assert f"write_file would write to folder {public}" in question
    assert sorted(p.name for p in public.iterdir()) == ["notes.md"]


async def test_a_copy_across_roots_in_one_call_asks(tmp_path: Path, make_server: Make) -> None:
    private, public = two_roots(tmp_path)
    asked = Asked("cancel")
    async with Client(make_server(private, public), elicitation_handler=asked) as client:
        result = await client.call_tool_mcp(
            "move_path", {"source": str(private / "keys.txt"), "destination": str(public / "keys.txt"), "copy": True}
        )
    assert result.is_error
    assert len(asked.messages) == 1
    assert not (public / "keys.txt").exists()
    assert (private / "keys.txt").exists()


async def test_writing_in_the_root_read_does_not_ask(tmp_path: Path, make_server: Make) -> None:
    private, public = two_roots(tmp_path)
    asked = Asked("decline")
    async with Client(make_server(private, public), elicitation_handler=asked) as client:
        await client.call_tool("read_file", {"path": str(public / "notes.md")})
        result = await client.call_tool_mcp("write_file", {"path": str(public / "todo.md"), "content": "- x\n"})
    assert not result.is_error, text(result)
    assert asked.messages == []
    assert (public / "todo.md").read_text() == "- x\n"


async def test_nested_roots_are_one_place_whatever_their_order(tmp_path: Path, make_server: Make) -> None:
    """Whoever allowed /A allowed /A/b too: reading /A and writing under /A/b is no cross write."""
    outer = tmp_path / "A"
    (outer / "b").mkdir(parents=True)
    (outer / "notes.md").write_text("x\n")
    for roots in ((outer / "b", outer), (outer, outer / "b")):
        asked = Asked("decline")
        async with Client(make_server(*roots), elicitation_handler=asked) as client:
            await client.call_tool("read_file", {"path": str(outer / "notes.md")})
            result = await client.call_tool_mcp("write_file", {"path": str(outer / "b" / "t.md"), "content": "y\n"})
        assert not result.is_error, text(result)
        assert asked.messages == []
        assert (outer / "b" / "t.md").read_text() == "y\n"


@pytest.mark.parametrize("scheme", ["file", "FILE"])
async def test_a_file_read_as_a_resource_counts_as_read_in_its_root(
    tmp_path: Path, make_server: Make, scheme: str
) -> None:
    """resources/read of a file is the same flow as read_file of it: a write in another root asks (a scheme's case
    is no way around it), and the decline leaves the tree as it was."""
    private, public = two_roots(tmp_path)
    asked = Asked("decline")
    async with Client(make_server(private, public), elicitation_handler=asked, mode="legacy") as client:
        uri = scheme + file_uri(str(private / "keys.txt")).removeprefix("file")
        [content] = await client.read_resource(uri)
        assert "hunter2" in getattr(content, "text", "")
        result = await client.call_tool_mcp("write_file", {"path": str(public / "leak.txt"), "content": "hunter2"})
    assert result.is_error
    assert "declined" in text(result)
    [question] = asked.messages
    assert f"after this session read folder {private}." in question
    assert sorted(p.name for p in public.iterdir()) == ["notes.md"]


async def test_a_resource_read_then_a_write_in_its_own_root_does_not_ask(tmp_path: Path, make_server: Make) -> None:
    private, public = two_roots(tmp_path)
    asked = Asked("decline")
    async with Client(make_server(private, public), elicitation_handler=asked) as client:
        await client.read_resource(file_uri(str(public / "notes.md")))
        result = await client.call_tool_mcp("write_file", {"path": str(public / "todo.md"), "content": "- x\n"})
    assert not result.is_error, text(result)
    assert asked.messages == []
    assert (public / "todo.md").read_text() == "- x\n"


async def test_a_resource_read_that_failed_counts_as_nothing(tmp_path: Path, make_server: Make) -> None:
    private, public = two_roots(tmp_path)
    asked = Asked("decline")
    async with Client(make_server(private, public), elicitation_handler=asked) as client:
        with pytest.raises(MCPError):
            await client.read_resource(file_uri(str(private / "missing.txt")))
        result = await client.call_tool_mcp("write_file", {"path": str(public / "todo.md"), "content": "- x\n"})
    assert not result.is_error, text(result)
    assert asked.messages == []


async def test_without_elicitation_the_write_is_refused_and_the_tree_unchanged(
    tmp_path: Path, make_server: Make
) -> None:
    private, public = two_roots(tmp_path)
    async with Client(make_server(private, public), mode="legacy") as client:
        await client.call_tool("search_text", {"query": "API_KEY", "path": str(private)})
        result = await client.call_tool_mcp("delete_path", {"path": str(public / "notes.md")})
    assert result.is_error
    assert "--allow-writes-to" in text(result)
    assert (public / "notes.md").read_text() == "# Notes\n"


async def test_allowed_target_folder_writes_without_asking(tmp_path: Path, make_server: Make) -> None:
    private, public = two_roots(tmp_path)
    server = make_server(private, public)
    server.flows.allow(targets=[str(public)])
    async with Client(server, mode="legacy") as client:
        await client.call_tool("read_file", {"path": str(private / "keys.txt")})
        result = await client.call_tool_mcp("write_file", {"path": str(public / "ok.txt"), "content": "ok"})
    assert not result.is_error, text(result)
    assert (public / "ok.txt").read_text() == "ok"


async def test_every_write_tool_declares_its_folder(tmp_path: Path, make_server: Make) -> None:
    server = make_server(*two_roots(tmp_path))
    assert [d.name for d in server.toolsets.definitions() if not d.read_only and d.writes is None] == []


def test_the_serving_flags_reach_the_guard_over_stdio(tmp_path: Path) -> None:
    """`--allow-writes-to` as its users pass it, on the server as shipped: a client without elicitation (this raw
    wire declares none) is refused the cross write, then allowed once the target is on the list."""
    private, public = two_roots(tmp_path)

    def cross_write(*flags: str) -> dict[str, Any]:
        argv = python_module("mcp_server_filesystem", str(private), str(public), "--no-watch", *flags)
        with StdioWire(argv) as wire:
            wire.initialize(timeout=60)
            read = {"name": "read_file", "arguments": {"path": str(private / "keys.txt")}}
            assert not wire.request("tools/call", read)["result"].get("isError")
            write = {"name": "write_file", "arguments": {"path": str(public / "leak.txt"), "content": "x"}}
            result: dict[str, Any] = wire.request("tools/call", write)["result"]
            return result

    refused = cross_write()
    assert refused["isError"]
    assert "--allow-writes-to" in refused["content"][0]["text"]
    assert not (public / "leak.txt").exists()
    allowed = cross_write("--allow-writes-to", f"/nowhere,{public}")
    assert not allowed.get("isError"), allowed
    assert (public / "leak.txt").read_text() == "x"
