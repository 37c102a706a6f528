"""`ResourceSet`: concrete resources served by URI from one provider, updated in bulk."""

from __future__ import annotations

import pytest
from fastmcp import Client
from fastmcp.resources import FunctionResource
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_server_core import ResourceSet

from .conftest import build


def memo(key: str) -> FunctionResource:
    return FunctionResource.from_function(lambda: f"memo {key}", uri=f"memo://{key}", name=key, mime_type="text/plain")


async def test_a_resource_set_is_listed_read_and_updated_in_place_of_the_local_provider() -> None:
    server = build()
    memos = ResourceSet([memo("a"), memo("b")])
    server.add_provider(memos)
    async with Client(server) as client:
        before = [str(r.uri) for r in await client.list_resources()]
        read = await client.read_resource("memo://b")
        memos.update(add=[memo("c")], remove=["memo://a"])
        after = [str(r.uri) for r in await client.list_resources()]
        with pytest.raises(MCPError):
            await client.read_resource_mcp("memo://a")
    assert before == ["memo://a", "memo://b"]
    assert getattr(read[0], "text", "") == "memo b"
    assert after == ["memo://b", "memo://c"]
    assert "memo://c" in memos
    assert "memo://a" not in memos
    assert len(memos) == 2
    assert await server.local_provider.list_resources() == []


async def test_subscribing_follows_the_set() -> None:
    server = build()
    memos = ResourceSet([memo("a")])
    server.add_provider(memos)
    async with Client(server, mode="legacy") as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.session.subscribe_resource("memo://a")
        memos.update(remove=["memo://a"])
        with pytest.raises(MCPError) as raised, pytest.warns(MCPDeprecationWarning):
            await client.session.subscribe_resource("memo://a")
    assert raised.value.error.code == -32602
