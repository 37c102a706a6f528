"""Toolsets switched at run time, and the notifications that say so, debounced."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core import ReferenceServer
from mcp_server_core.protocol.toolsets import parse_toolsets

from .conftest import arithmetic, build, writing


def test_parse_toolsets_understands_all_default_and_names() -> None:
    available = [arithmetic(), writing()]
    assert parse_toolsets(None, available) == ["arithmetic"]
    assert parse_toolsets("all", available) == ["arithmetic", "writing"]
    assert parse_toolsets("writing,default", available) == ["writing", "arithmetic"]
    with pytest.raises(ValueError, match="Did you mean 'writing'"):
        parse_toolsets("writng", available)


def methods_heard(messages: list[Any]) -> list[str]:
    return [getattr(getattr(m, "root", m), "method", "") for m in messages]


@pytest.mark.parametrize("era", ["legacy"])
async def test_enabling_a_toolset_at_run_time_tells_the_client(server: ReferenceServer, era: str) -> None:
    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        heard.append(message)

    async with Client(server, mode=era, message_handler=on_message) as client:
        before = {t.name for t in await client.list_tools()}
        assert server.toolsets.enable("writing")
        assert not server.toolsets.enable("writing")  # already on: no second notification
        await asyncio.sleep(server.changes.debounce * 4)
        after = {t.name for t in await client.list_tools()}
        assert server.toolsets.disable("writing")
        await asyncio.sleep(server.changes.debounce * 4)
        final = {t.name for t in await client.list_tools()}
    assert after - before == {"write_thing"}
    assert final == before
    assert methods_heard(heard).count("notifications/tools/list_changed") == 2


async def test_a_burst_of_changes_sends_one_notification_of_each_kind() -> None:
    server = build(debounce=0.1)
    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        heard.append(message)

    async with Client(server, mode="legacy", message_handler=on_message) as client:
        await client.ping()
        for _ in range(25):
            server.changes.tools_changed()
            server.changes.resources_changed()
        await asyncio.sleep(0.4)
    kinds = methods_heard(heard)
    assert kinds.count("notifications/tools/list_changed") == 1
    assert kinds.count("notifications/resources/list_changed") == 1


async def test_resource_updates_reach_only_subscribers() -> None:
    server = build()
    server.resource("memo://a", name="a", description="A")(lambda: "a")
    server.resource("memo://b", name="b", description="B")(lambda: "b")
    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        heard.append(getattr(message, "root", message))

    async with Client(server, mode="legacy", message_handler=on_message) as client:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is current for this handshake-era client
            await client.session.subscribe_resource("memo://a")
        server.changes.resource_updated("memo://a")
        server.changes.resource_updated("memo://b")
        await asyncio.sleep(0.3)
    updated = [str(m.params.uri) for m in heard if getattr(m, "method", "") == "notifications/resources/updated"]
    assert updated == ["memo://a"]


def test_changes_before_serving_are_harmless() -> None:
    server = build()
    server.changes.tools_changed()  # no loop, no client: nothing to tell, nothing to fail
    assert server.changes.sent == 0


async def test_a_stateless_caller_without_a_credential_cannot_switch_a_toolset_on() -> None:
    """Without sessions a choice is kept under the caller's principal: an anonymous caller's would be forgotten
    with its answer, or be every anonymous caller's. It is refused, saying how to get an identity, and the tool
    list stays as it was."""
    server = build(enabled_toolsets="dynamic")
    server.without_sessions(per_principal=True)
    async with Client(server, mode="legacy") as client:
        before = {t.name for t in await client.list_tools()}
        answer = await client.call_tool("enable_toolset", {"name": "writing"}, raise_on_error=False)
        after = {t.name for t in await client.list_tools()}
    assert {"list_toolsets", "enable_toolset"} <= before
    assert answer.is_error
    text = answer.content[0].text  # type: ignore[union-attr]
    assert "carries no credential" in text, text
    assert "--auth-token-file" in text, text
    assert after == before
