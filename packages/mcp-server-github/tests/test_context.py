"""Context and toolsets: who am I, discovery at run time with tools/list_changed, and read-only mode."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_github import FakeGitHub, server_for, text_of
from fastmcp import Client
from mcp.shared.exceptions import MCPError

WRITES = {
    "create_issue",
    "update_issue",
    "add_issue_comment",
    "create_pull_request",
    "update_pull_request",
    "merge_pull_request",
    "review_pull_request",
    "create_or_update_file",
    "delete_file",
    "push_files",
    "create_branch",
    "fork_repository",
}


async def test_get_me_names_the_account_its_scopes_and_what_is_left(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("get_me", {})
    assert text_of(result) == (
        "Signed in as octocat (The Octocat)\ntoken scopes: repo, read:org\n"
        f"requests left this hour: {fake.remaining}\nrepositories: any\nwrites: available"
    )
    assert fake.count() == 1


async def test_the_default_toolsets_are_small_and_others_arrive_with_list_changed(fake: FakeGitHub) -> None:
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        heard.append(getattr(getattr(message, "root", message), "method", type(message).__name__))

    async with Client(server_for(fake, toolsets=None), mode="legacy", message_handler=on_message) as client:
        before = {t.name for t in await client.list_tools()}
        listing = text_of(await client.call_tool("list_toolsets", {}))
        enabled = await client.call_tool("enable_toolset", {"name": "pull_requests"})
        await asyncio.sleep(0.3)
        after = {t.name for t in await client.list_tools()}
        again = await client.call_tool("enable_toolset", {"name": "pull_requests"})
        wrong = await client.call_tool_mcp("enable_toolset", {"name": "pulls"})
    assert before == {
        "get_me",
        "list_toolsets",
        "enable_toolset",
        "list_issues",
        "get_issue",
        "search_issues",
        "create_issue",
        "update_issue",
        "add_issue_comment",
        "list_labels",
    }
    assert "pull_requests (off): Read, review, create, update and merge pull requests." in listing
    assert "get_pull_request" in after - before
    assert "merge_pull_request" in after
    # At least one: under pytest the helpers' hub can hold two SDK connections for one in-memory client and
    # tell both (reported to the helpers); the contract here is that the client hears of the change.
    assert "notifications/tools/list_changed" in heard, heard
    assert text_of(enabled).startswith("Toolset pull_requests is now on: list_pull_requests, get_pull_request,")
    assert "was already on" in text_of(again)
    assert wrong.is_error
    assert text_of(wrong) == (
        "unknown toolset 'pulls'. Known toolsets: 'actions', 'context', 'issues', 'pull_requests', 'repos', 'search'."
    )
    assert fake.count() == 0, "discovery costs GitHub nothing"


async def test_read_only_registers_no_write_tool_whatever_is_enabled(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, read_only=True, toolsets=None)) as client:
        await client.call_tool("enable_toolset", {"name": "repos"})
        await client.call_tool("enable_toolset", {"name": "pull_requests"})
        names = {t.name for t in await client.list_tools()}
        me = text_of(await client.call_tool("get_me", {}))
        listing = text_of(await client.call_tool("list_toolsets", {}))
    assert names
    assert not names & WRITES
    assert "get_file_contents" in names
    assert "get_pull_request" in names
    assert "read-only: no tool writes" in me
    assert not any(write in listing for write in WRITES)
    assert fake.count("GET") == fake.count()


async def test_all_toolsets_hold_every_write_and_each_write_is_annotated_as_one(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) >= WRITES
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints is not None
        assert hints.read_only_hint is (name not in WRITES), name
        assert hints.open_world_hint is (name not in {"list_toolsets", "enable_toolset"}), name
    assert tools["delete_file"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["push_files"].annotations.destructive_hint is True  # type: ignore[union-attr]
    assert tools["create_issue"].annotations.destructive_hint is False  # type: ignore[union-attr]


async def test_a_toolset_enabled_by_one_session_stays_in_that_session(fake: FakeGitHub) -> None:
    """Two clients of one server: A's enable_toolset changes A's tools and notifies A; B sees and hears nothing."""
    server = server_for(fake, toolsets=None)
    heard: dict[str, list[str]] = {"a": [], "b": []}

    def listener(who: str) -> Any:
        async def on_message(message: Any) -> None:
            heard[who].append(getattr(getattr(message, "root", message), "method", type(message).__name__))

        return on_message

    async with (
        Client(server, mode="legacy", message_handler=listener("a")) as a,
        Client(server, mode="legacy", message_handler=listener("b")) as b,
    ):
        before = {t.name for t in await b.list_tools()}
        await a.call_tool("enable_toolset", {"name": "pull_requests"})
        await asyncio.sleep(0.3)
        a_tools = {t.name for t in await a.list_tools()}
        b_tools = {t.name for t in await b.list_tools()}
        b_listing = text_of(await b.call_tool("list_toolsets", {}))
        a_listing = text_of(await a.call_tool("list_toolsets", {}))
        b_heard_before_its_own_choice = list(heard["b"])
        with pytest.raises(MCPError) as foreign:
            await b.call_tool_mcp("get_pull_request", {"repo": "octo/hello", "number": 1})
        b_enabled = text_of(await b.call_tool("enable_toolset", {"name": "pull_requests"}))
        await asyncio.sleep(0.3)
        b_after = {t.name for t in await b.list_tools()}
    assert "get_pull_request" in a_tools
    assert b_tools == before
    assert "pull_requests (off)" in b_listing
    assert "pull_requests (on)" in a_listing
    assert "notifications/tools/list_changed" in heard["a"]
    assert "notifications/tools/list_changed" not in b_heard_before_its_own_choice
    assert foreign.value.error.code == -32602, "a tool only another session enabled is unknown here"
    assert b_enabled.startswith("Toolset pull_requests is now on"), "B's own choice is B's, not 'already on'"
    assert "get_pull_request" in b_after
    assert "notifications/tools/list_changed" in heard["b"]
