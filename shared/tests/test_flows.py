"""The confirmation of cross writes in the helpers (protocol/flows.py): how history is keyed and bounded, and what
the declarations allow, through a small server of this test's own and fastmcp's Client."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.resources import FunctionResource
from mcp.shared.exceptions import MCPError
from mcp_server_core import ReferenceServer, Toolset, tool
from mcp_server_core.conventions.places import Place, place_of
from mcp_server_core.operations.audit import configure_audit_log
from mcp_server_core.operations.metrics import call_metrics
from mcp_server_core.protocol.flows import LOST_COUNT, MemoryFlowStore
from mcp_server_core.testing import Asked

WRITTEN: list[str] = []


def shelves() -> Toolset:
    toolset = Toolset("shelves", "Read and write shelves")

    @toolset.tool(title="Read shelf", read_only=True, open_world=False, reads=place_of("shelf", "shelf"))
    def read_shelf(shelf: str) -> str:
        """Read what is on a shelf."""
        return f"books on {shelf}"

    @toolset.tool(title="Write shelf", read_only=False, open_world=False, writes=place_of("shelf", "shelf"))
    def write_shelf(shelf: str, text: str) -> str:
        """Put something on a shelf."""
        WRITTEN.append(shelf)
        return "done"

    return toolset


def server(enabled: str | None = None) -> ReferenceServer:
    WRITTEN.clear()
    return ReferenceServer("shelves", version="1", toolsets=[shelves()], enabled_toolsets=enabled)


async def test_without_sessions_a_principal_has_one_history() -> None:
    """Stateless HTTP keeps no session: the read of one request must still count for the next one's write."""
    shared = server()
    shared.without_sessions()
    async with Client(shared, mode="legacy") as reader:
        await reader.call_tool("read_shelf", {"shelf": "private"})
    async with Client(shared, mode="legacy") as writer:
        result = await writer.call_tool("write_shelf", {"shelf": "public", "text": "x"}, raise_on_error=False)
    assert result.is_error
    assert "after this session read shelf private" in result.content[0].text  # type: ignore[union-attr]
    assert WRITTEN == []


async def test_with_sessions_each_has_its_own() -> None:
    shared = server()
    async with Client(shared, mode="legacy") as reader:
        await reader.call_tool("read_shelf", {"shelf": "private"})
    async with Client(shared, mode="legacy") as writer:
        result = await writer.call_tool("write_shelf", {"shelf": "public", "text": "x"})
    assert not result.is_error
    assert WRITTEN == ["public"]


async def test_a_failed_read_is_not_remembered() -> None:
    shared = server()
    async with Client(shared, mode="legacy") as client:
        failed = await client.call_tool("read_shelf", {"shelf": 3}, raise_on_error=False)  # fails its schema
        assert failed.is_error
        result = await client.call_tool("write_shelf", {"shelf": "public", "text": "x"})
    assert not result.is_error


def with_shelf_resources(shared: ReferenceServer, place: Any = None) -> ReferenceServer:
    """`shelf://{shelf}` resources, declared to read their shelf (or `place(uri)`, when given)."""
    from fastmcp.resources import ResourceTemplate

    shared.add_template(
        ResourceTemplate.from_function(lambda shelf: f"books on {shelf}", uri_template="shelf://{shelf}", name="shelf")
    )
    shared.flows.resources_read("shelf://", place or (lambda uri: Place("shelf", uri.removeprefix("shelf://"))))
    return shared


async def test_a_resource_read_counts_as_a_tool_read_of_its_place() -> None:
    """Without sessions too: the principal's history holds what it read as resources."""
    shared = with_shelf_resources(server())
    shared.without_sessions()
    async with Client(shared, mode="legacy") as reader:
        await reader.read_resource("shelf://private")
    async with Client(shared, mode="legacy") as writer:
        same = await writer.call_tool("write_shelf", {"shelf": "private", "text": "x"})
        assert not same.is_error
        result = await writer.call_tool("write_shelf", {"shelf": "public", "text": "x"}, raise_on_error=False)
    assert result.is_error
    assert "after this session read shelf private" in result.content[0].text  # type: ignore[union-attr]
    assert WRITTEN == ["private"]


async def test_a_resource_whose_place_cannot_be_told_makes_writes_ask() -> None:
    def broken(uri: str) -> Place:
        raise OSError("disk error")

    shared = with_shelf_resources(server(), broken)
    async with Client(shared, mode="legacy") as client:
        await client.read_resource("shelf://private")
        result = await client.call_tool("write_shelf", {"shelf": "private", "text": "x"}, raise_on_error=False)
    assert result.is_error
    assert "a resource whose source is unknown" in result.content[0].text  # type: ignore[union-attr]
    assert WRITTEN == []


async def test_an_undeclared_resource_read_counts_as_nothing() -> None:
    shared = server()
    shared.add_resource(FunctionResource.from_function(lambda: "the catalogue", uri="catalogue://all", name="all"))
    async with Client(shared, mode="legacy") as client:
        await client.read_resource("catalogue://all")
        result = await client.call_tool("write_shelf", {"shelf": "public", "text": "x"})
    assert not result.is_error


async def test_a_store_that_lost_count_asks_for_every_write() -> None:
    store = MemoryFlowStore(max_sessions=2, max_places=2)
    await store.add_sources("a", [Place("shelf", "1"), Place("shelf", "2"), Place("shelf", "3")])
    assert LOST_COUNT in await store.sources("a")
    await store.add_sources("b", [Place("shelf", "1")])
    await store.add_sources("c", [Place("shelf", "1")])
    assert await store.sources("a") == frozenset()  # the least recently used session is forgotten first
    assert await store.sources("c") == {Place("shelf", "1")}


def test_places_compare_by_key_and_allow_lists_match_key_or_label() -> None:
    channel = Place("channel", "C0GENERAL", "#general")
    assert channel == Place("channel", "C0GENERAL", "general")
    assert channel.named("#General")
    assert channel.named("C0GENERAL")
    assert not channel.named("random")
    assert Place("folder", "/srv/public").named("/srv/public/")
    assert not Place("folder", "/srv/public").named("/srv")


def test_a_read_only_tool_cannot_declare_a_write() -> None:
    def declared(arguments: Mapping[str, Any]) -> Place:
        return Place("shelf", "x")

    with pytest.raises(ValueError, match="writes nowhere"):
        tool(title="Read", read_only=True, open_world=False, writes=declared)


async def test_a_write_tool_the_session_cannot_call_is_unknown_and_asks_nothing() -> None:
    """The guard follows fastmcp's visibility check: a hidden tool's call is the normal unknown-tool error, and its
    user is never asked about a write that could not have run."""
    reading = Toolset("reading", "Peek at shelves")

    @reading.tool(title="Peek at shelf", read_only=True, open_world=False, reads=place_of("shelf", "shelf"))
    def peek_shelf(shelf: str) -> str:
        """Peek at a shelf."""
        return f"books on {shelf}"

    hidden = ReferenceServer("shelves", version="1", toolsets=[reading, shelves()], enabled_toolsets="reading")
    WRITTEN.clear()
    asked = Asked("accept")
    async with Client(hidden, elicitation_handler=asked, mode="legacy") as client:
        await client.call_tool("peek_shelf", {"shelf": "private"})
        with pytest.raises(MCPError, match="Unknown tool: 'write_shelf'"):
            await client.call_tool_mcp("write_shelf", {"shelf": "public", "text": "x"})
    assert asked.messages == []
    assert WRITTEN == []


def _confirmations(outcome: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("mcp_cross_write_confirmations_total", {"outcome": outcome}) or 0.0


@pytest.mark.parametrize(
    ("action", "outcome", "written"),
    [("accept", "accepted", ["public"]), ("decline", "declined", []), ("cancel", "cancelled", [])],
)
async def test_each_confirmation_is_counted_and_named_on_its_audit_line(
    tmp_path: Path, action: str, outcome: str, written: list[str]
) -> None:
    call_metrics()  # what the HTTP transport turns on
    before = _confirmations(outcome)
    audit = tmp_path / "audit.jsonl"
    configure_audit_log(str(audit))
    try:
        async with Client(server(), elicitation_handler=Asked(action), mode="legacy") as client:
            await client.call_tool("read_shelf", {"shelf": "private"})
            await client.call_tool_mcp("write_shelf", {"shelf": "public", "text": "x"})
    finally:
        configure_audit_log(None)
    assert written == WRITTEN
    assert _confirmations(outcome) == before + 1
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    read, write = lines
    assert "cross_write_confirmation" not in read
    assert write["cross_write_confirmation"] == outcome
    assert write["outcome"] == ("ok" if written else "refused")


async def test_a_client_that_cannot_be_asked_is_counted_as_refused(tmp_path: Path) -> None:
    call_metrics()
    before = _confirmations("refused_no_elicitation")
    audit = tmp_path / "audit.jsonl"
    configure_audit_log(str(audit))
    try:
        async with Client(server(), mode="legacy") as client:
            await client.call_tool("read_shelf", {"shelf": "private"})
            await client.call_tool_mcp("write_shelf", {"shelf": "public", "text": "x"})
    finally:
        configure_audit_log(None)
    assert WRITTEN == []
    assert _confirmations("refused_no_elicitation") == before + 1
    write = json.loads(audit.read_text().splitlines()[-1])
    assert (write["cross_write_confirmation"], write["outcome"]) == ("refused_no_elicitation", "refused")
