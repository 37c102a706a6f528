"""Hostile content in the notes folder reaches the model fenced or in its one-line form, within every tool's budget,
while the server keeps answering: the testing kit's three checks over every tool. A fork plants the same fixtures
in what its own tools read and keeps this file's shape: a tool with no hostile case fails it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core.testing.hostile import (
    HOSTILE_BODIES,
    HOSTILE_NAMES,
    assert_every_tool_holds,
    assert_failures_hold,
)
from mcp_server_template.server import build_server
from mcp_server_template.settings import TemplateSettings

FIXTURES = [*HOSTILE_NAMES.values(), *HOSTILE_BODIES.values()]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """Every fixture as a note's text, and every hostile name as a file beside them (the tools never list a file
    whose name is not a note name, but they must not show it raw either)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for key, text in {**HOSTILE_NAMES, **HOSTILE_BODIES}.items():
        (folder / key).write_text(text, encoding="utf-8")
    for name in HOSTILE_NAMES.values():
        (folder / name).write_text(name, encoding="utf-8")
    (folder / "trailing\n").write_text("a name that a pattern ending in $ would take")
    return folder


def calls() -> dict[str, list[dict[str, Any]]]:
    """Each tool's calls over the fixtures: the keys must be every tool the server offers."""
    return {
        "list_notes": [{}, {"limit": 500}],
        "read_note": [{"name": key} for key in (*HOSTILE_NAMES, *HOSTILE_BODIES)]
        + [{"name": "long_line", "offset": 7_000}],
        "search_notes": [{"query": q, "limit": 200} for q in ("IMPORTANT", "a.txt", "x", "`", "<a", "red")],
        "write_note": [{"name": "copy", "text": HOSTILE_BODIES["backticks"]}],
        "delete_note": [{"name": "copy"}],
    }


async def test_every_tool_keeps_hostile_notes_fenced_within_budget_and_answers_ping(notes: Path) -> None:
    server = build_server(TemplateSettings(notes_dir=notes, toolsets="all"))
    budgets = {definition.name: definition.budget for definition in server.toolsets.definitions()}
    async with Client(server, mode="legacy") as client:
        await assert_every_tool_holds(client, calls(), budgets, FIXTURES)


async def test_a_long_note_is_read_page_by_page_with_the_fence_closed_on_each(notes: Path) -> None:
    (notes / "long").write_text("".join(f"line {n}\n" for n in range(5_000)))
    async with Client(build_server(TemplateSettings(notes_dir=notes))) as client:
        read, offset = "", 0
        while True:
            text = (await client.call_tool("read_note", {"name": "long", "offset": offset})).content[0].text
            body = text.split("```text\n", 1)[1].rsplit("\n```", 1)[0]
            read += body
            if "continue with offset=" not in text:
                break
            offset = int(text.rsplit("continue with offset=", 1)[1].split()[0].rstrip("]).,"))
    assert read == (notes / "long").read_text()


async def test_failures_naming_hostile_notes_are_one_bounded_line(notes: Path) -> None:
    """A note the call names that is not there, or a name no note may have: the failure quotes it in one bounded
    line. A fork adds the calls its own tools fail on."""
    calls = [("read_note", {"name": name + "-missing"}) for name in HOSTILE_NAMES.values()]
    calls += [("delete_note", {"name": name}) for name in HOSTILE_NAMES.values()]
    async with Client(build_server(TemplateSettings(notes_dir=notes, toolsets="all")), mode="legacy") as client:
        await assert_failures_hold(client, calls, FIXTURES)
