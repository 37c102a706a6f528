"""The conformance fixtures say what the suite expects, checked here where the suite itself is too lenient.

The suite passes `tools-call-simple-text` on any text and `tools-call-error` on any isError result, so a
server that lost both fixtures but answered unknown tools with an isError text would pass them. These
tests pin the actual answers; tests/test_conformance.py runs the suite itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import ERAS
from mcp_server_template.conformance import ERROR_TEXT, JSON_SCHEMA_2020_12, SIMPLE_TEXT
from mcp_server_template.server import build_server
from mcp_server_template.settings import TemplateSettings
from mcp_types import INVALID_PARAMS, PromptReference, ResourceTemplateReference, TextContent


@pytest.fixture
def server(tmp_path: Path) -> ReferenceServer:
    return build_server(TemplateSettings(notes_dir=tmp_path / "notes", conformance=True))


@pytest.fixture(params=ERAS)
async def client(server: ReferenceServer, request: pytest.FixtureRequest) -> AsyncIterator[Client[Any]]:
    async with Client(server, mode=request.param) as connected:
        yield connected


def _texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def test_simple_text_returns_its_sentence(client: Client[Any]) -> None:
    result = await client.call_tool_mcp("test_simple_text", {})
    assert not result.is_error, result
    assert _texts(result) == [SIMPLE_TEXT]


async def test_error_handling_is_an_error_result_saying_so(client: Client[Any]) -> None:
    result = await client.call_tool_mcp("test_error_handling", {})
    assert result.is_error is True
    assert _texts(result) == [ERROR_TEXT]


async def test_a_missing_fixture_is_a_protocol_error_not_a_passing_error_result(client: Client[Any]) -> None:
    with pytest.raises(MCPError) as raised:
        await client.call_tool_mcp("test_no_such_fixture", {})
    assert raised.value.error.code == INVALID_PARAMS


async def test_every_fixture_tool_has_a_title_a_description_and_four_annotations(client: Client[Any]) -> None:
    tools = [t for t in await client.list_tools() if t.name.startswith("test_") or t.name.startswith("json_")]
    assert len(tools) == 14, [t.name for t in tools]
    for tool in tools:
        assert tool.title, tool.name
        assert (tool.description or "").strip(), tool.name
        hints = tool.annotations
        assert hints is not None, tool.name
        assert hints.read_only_hint is True, tool.name
        for hint in ("destructive_hint", "idempotent_hint", "open_world_hint"):
            assert isinstance(getattr(hints, hint), bool), f"{tool.name}: {hint} missing"


async def test_the_2020_12_schema_is_listed_as_written(client: Client[Any]) -> None:
    listed = {t.name: t for t in await client.list_tools()}
    assert listed["json_schema_2020_12_tool"].input_schema == JSON_SCHEMA_2020_12


async def test_the_2020_12_tool_refuses_what_its_schema_forbids(client: Client[Any]) -> None:
    accepted = await client.call_tool_mcp("json_schema_2020_12_tool", {"name": "Ada", "address": {"city": "London"}})
    assert not accepted.is_error, accepted
    refused = await client.call_tool_mcp("json_schema_2020_12_tool", {"nickname": "x"})
    assert refused.is_error
    assert "nickname" in _texts(refused)[0]


async def test_completions_offer_prompt_arguments_and_template_ids_by_prefix(client: Client[Any]) -> None:
    prompt = PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
    assert (await client.complete(prompt, {"name": "arg1", "value": "test"})).values == ["test", "testing", "tested"]
    template = ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data")
    assert (await client.complete(template, {"name": "id", "value": "4"})).values == ["456"]


async def test_the_template_resource_reads_as_text_holding_its_id(client: Client[Any]) -> None:
    contents = await client.read_resource("test://template/123/data")
    assert '"id": "123"' in getattr(contents[0], "text", "")
