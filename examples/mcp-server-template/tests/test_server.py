"""The template passes the family's contract, and its notes behave as documented, through the protocol."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import ContractSuite, StdioWire, python_module
from mcp_server_template.server import build_server
from mcp_server_template.settings import TemplateSettings

BUDGET = 3_500


def make_server(notes: Path, **settings: Any) -> ReferenceServer:
    return build_server(TemplateSettings(notes_dir=notes, **settings))


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "groceries").write_text("milk\neggs\n")
    (folder / "ideas").write_text("a server for notes\n")
    return folder


class TestContract(ContractSuite):
    budget = BUDGET

    @pytest.fixture
    def server(self, notes: Path) -> ReferenceServer:
        self.notes = notes
        return make_server(notes)

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("read_note", {"name": "missing"}),
            ("write_note", {"name": "groceries", "text": "overwritten?"}),
            ("delete_note", {"name": "missing"}),
            ("list_notes", {"cursor": "not-a-cursor"}),
        ]

    def state(self, server: ReferenceServer) -> Any:
        return sorted((p.name, p.read_bytes()) for p in self.notes.iterdir())

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [("list_notes", {}), ("search_notes", {"query": "milk"}), ("read_note", {"name": "ideas"})]

    def stdio_command(self, tmp_path: Path) -> list[str]:
        return python_module("mcp_server_template", "--notes-dir", str(tmp_path))


async def test_a_created_note_is_announced_and_a_subscribed_one_updated(notes: Path) -> None:
    server = make_server(notes)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        heard.append(getattr(getattr(message, "root", message), "method", type(message).__name__))

    async with Client(server, mode="legacy", message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):  # deprecated for 2026-07-28 clients, current for this one
            await client.session.subscribe_resource("note://groceries")
        await client.call_tool("write_note", {"name": "todo", "text": "ship it"})
        await client.call_tool("write_note", {"name": "groceries", "text": "bread", "overwrite": True})
        await asyncio.sleep(0.3)
        names = [r.name for r in await client.list_resources()]
    assert "todo" in names
    assert heard.count("notifications/resources/list_changed") == 1, heard
    assert heard.count("notifications/resources/updated") == 1, heard


async def test_read_only_mode_registers_no_tool_that_writes(notes: Path) -> None:
    async with Client(make_server(notes, read_only=True)) as client:
        names = {t.name for t in await client.list_tools()}
    assert names == {"list_notes", "read_note", "search_notes"}


async def test_list_notes_pages_with_a_cursor(notes: Path) -> None:
    for index in range(7):
        (notes / f"n{index}").write_text("x")
    async with Client(make_server(notes)) as client:
        seen: list[str] = []
        cursor = None
        while True:
            result = await client.call_tool("list_notes", {"limit": 3, **({"cursor": cursor} if cursor else {})})
            page = result.structured_content or {}
            seen += [n["name"] for n in page["notes"]]
            cursor = page.get("next_cursor")
            if not cursor:
                break
    assert seen == sorted(["groceries", "ideas", *(f"n{i}" for i in range(7))])


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("write_note", {"name": "../escape", "text": "x"}, "name"),  # the note name's pattern
        ("list_notes", {"limit": 0}, "limit"),  # Limit's floor of 1
        ("list_notes", {"cursor": "x" * 20_000}, "cursor"),  # Cursor's length (16,384)
        ("search_notes", {"query": ""}, "query"),
    ],
)
async def test_a_bound_left_out_of_the_schema_is_still_enforced(
    notes: Path, tool: str, arguments: dict[str, Any], field: str
) -> None:
    before = sorted(p.name for p in notes.parent.rglob("*"))
    async with Client(make_server(notes)) as client:
        advertised = {t.name: t.input_schema for t in await client.list_tools()}[tool]["properties"][field]
        result = await client.call_tool_mcp(tool, arguments)
    assert not {"pattern", "minimum", "maxLength", "minLength"} & set(advertised), advertised
    assert result.is_error
    assert f"{field}:" in result.content[0].text
    assert sorted(p.name for p in notes.parent.rglob("*")) == before


def test_python_m_and_the_console_script_print_the_same_config(tmp_path: Path) -> None:
    import subprocess
    import sys

    via_module = subprocess.run(
        [sys.executable, "-m", "mcp_server_template", "--print-config", "claude"], capture_output=True, check=True
    ).stdout
    script = Path(sys.executable).parent / "mcp-server-template"
    via_script = subprocess.run([str(script), "--print-config", "claude"], capture_output=True, check=True).stdout
    assert via_module == via_script
    assert b'"command": "uvx"' in via_module
    assert b"mcp-server-template" in via_module


def test_stdio_announces_a_note_written_by_a_tool(tmp_path: Path) -> None:
    with StdioWire(python_module("mcp_server_template", "--notes-dir", str(tmp_path))) as wire:
        wire.initialize()
        wire.request("tools/call", {"name": "write_note", "arguments": {"name": "n", "text": "t"}})
        wire.wait_for_notification("notifications/resources/list_changed")
        assert wire.close() == 0
