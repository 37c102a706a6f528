"""Files as resources, and the notifications a change on disk sends: in memory and over stdio."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_server_core.testing import StdioWire, WireError, python_module
from mcp_server_filesystem.resources import file_uri

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"


class Heard:
    """Collects the methods of the notifications a client receives."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.params: list[Any] = []

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method:
            self.methods.append(method)
            self.params.append(getattr(root, "params", None))

    async def wait_for(self, method: str, count: int = 1, *, seconds: float = 15.0) -> None:
        deadline = asyncio.get_running_loop().time() + seconds
        while self.methods.count(method) < count:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no {method} within {seconds} s; heard {self.methods}")
            await asyncio.sleep(0.05)

    def clear(self) -> None:
        self.methods.clear()
        self.params.clear()


async def until_watching(heard: Heard, folder: Path) -> None:
    """Create probe files until the watcher reports one, then let its echoes pass: the watcher is live."""
    for attempt in range(60):
        (folder / f"probe-{attempt}.txt").write_text("")
        try:
            await heard.wait_for(LIST_CHANGED, seconds=0.5)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError("the watcher never reported a new file")
    await asyncio.sleep(0.5)
    heard.clear()


def until_watching_stdio(wire: StdioWire, folder: Path) -> None:
    for attempt in range(60):
        (folder / f"probe-{attempt}.txt").write_text("")
        try:
            wire.wait_for_notification(LIST_CHANGED, timeout=0.5)
            break
        except WireError:
            continue
    else:
        raise AssertionError("the watcher never reported a new file")
    while True:  # let the probes' echoes pass
        try:
            wire.wait_for_notification(LIST_CHANGED, timeout=0.5)
        except WireError:
            break
    wire.notifications.clear()


async def subscribe(client: Client[Any], uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)  # current for this (legacy) client
        await client.session.subscribe_resource(uri)


async def test_files_are_listed_as_file_uris_with_a_template(client: Client[Any], root: Path) -> None:
    (root / ".gitignore").write_text("ignored.txt\n")
    (root / "ignored.txt").write_text("x")
    resources = {r.name: r for r in await client.list_resources()}
    assert sorted(resources) == ["notes.txt", "src/app.py"]
    assert str(resources["notes.txt"].uri) == (root / "notes.txt").resolve().as_uri()
    templates = await client.list_resource_templates()
    assert [t.uri_template for t in templates] == ["file:///{path*}"]


async def test_reading_a_resource_gives_text_or_blob(client: Client[Any], root: Path) -> None:
    (root / "data.bin").write_bytes(b"\x00\x01\x02")
    (root / "new file.txt").write_text("spaced\n")
    text = await client.read_resource(file_uri(str(root / "notes.txt")))
    assert getattr(text[0], "text", None) == "one\ntwo\nthree\n"
    blob = await client.read_resource(file_uri(str(root / "data.bin")))
    assert getattr(blob[0], "blob", None) == "AAEC"
    spaced = await client.read_resource(file_uri(str(root / "new file.txt")))
    assert getattr(spaced[0], "text", None) == "spaced\n"


async def test_resources_outside_the_roots_cannot_be_read_or_subscribed(
    make_server: Any, root: Path, outside: Path
) -> None:
    async with Client(make_server(root), mode="legacy") as client:
        for uri in (file_uri(str(outside / "secret.txt")), f"file://{root}/../outside/secret.txt"):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            assert "TOP SECRET" not in str(raised.value)
            with pytest.raises(MCPError):
                await subscribe(client, uri)


async def test_a_fifo_resource_is_refused_without_blocking(client: Client[Any], root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(MCPError):
        await client.read_resource(file_uri(str(root / "pipe")))
    assert "pipe" not in [r.name for r in await client.list_resources()]


async def test_a_tool_write_announces_a_new_file_and_updates_a_subscriber(make_server: Any, root: Path) -> None:
    heard = Heard()
    async with Client(make_server(root), mode="legacy", message_handler=heard) as client:
        await subscribe(client, file_uri(str(root / "notes.txt")))
        await client.call_tool("write_file", {"path": "fresh.txt", "content": "x"})
        await client.call_tool("edit_file", {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}]})
        await heard.wait_for(LIST_CHANGED)
        await heard.wait_for(UPDATED)
        assert "fresh.txt" in [r.name for r in await client.list_resources()]


async def _watched(make_server: Any, root: Path, heard: Heard, act: Callable[[], None], *, uri: str | None) -> None:
    async with Client(make_server(root, watch=True), mode="legacy", message_handler=heard) as client:
        if uri:
            await subscribe(client, uri)
        await client.list_tools()
        await until_watching(heard, root)
        act()
        await heard.wait_for(UPDATED if uri else LIST_CHANGED)


async def test_a_change_on_disk_to_a_subscribed_file_sends_updated(make_server: Any, root: Path) -> None:
    heard = Heard()
    uri = file_uri(str(root / "notes.txt"))
    await _watched(make_server, root, heard, lambda: (root / "notes.txt").write_text("changed\n"), uri=uri)
    assert str(heard.params[heard.methods.index(UPDATED)].uri) == uri


async def test_files_created_or_deleted_on_disk_send_list_changed(make_server: Any, root: Path) -> None:
    heard = Heard()
    await _watched(make_server, root, heard, lambda: (root / "src" / "born.py").write_text(""), uri=None)
    heard = Heard()
    await _watched(make_server, root, heard, lambda: (root / "notes.txt").unlink(), uri=None)


async def test_unsubscribed_files_send_no_updated(make_server: Any, root: Path) -> None:
    heard = Heard()

    def act() -> None:
        (root / "src" / "app.py").write_text("changed\n")  # not subscribed
        (root / "made.txt").write_text("new")  # a creation, so something is heard

    await _watched(make_server, root, heard, act, uri=None)
    await asyncio.sleep(0.3)
    assert UPDATED not in heard.methods


def test_stdio_announces_created_files_and_updates_subscribers(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "watched.txt").write_text("before\n")
    uri = (served / "watched.txt").resolve().as_uri()
    with StdioWire(python_module("mcp_server_filesystem", str(served))) as wire:
        wire.initialize()
        assert "result" in wire.request("resources/subscribe", {"uri": uri})
        until_watching_stdio(wire, served)
        (served / "watched.txt").write_text("after\n")
        note = wire.wait_for_notification(UPDATED)
        assert note["params"]["uri"] == uri
        (served / "born.txt").write_text("new\n")
        wire.wait_for_notification(LIST_CHANGED)
        listed = wire.request("resources/list")
        assert "born.txt" in [r["name"] for r in listed["result"]["resources"]]
        assert wire.close() == 0


def test_stdio_tool_write_sends_list_changed(tmp_path: Path) -> None:
    with StdioWire(python_module("mcp_server_filesystem", str(tmp_path), "--no-watch")) as wire:
        wire.initialize()
        answer = wire.request("tools/call", {"name": "write_file", "arguments": {"path": "fresh", "content": "x"}})
        assert answer["result"].get("isError") is not True, answer
        wire.wait_for_notification(LIST_CHANGED)
        assert wire.close() == 0
