"""Cross writes: a session that read one channel and posts to another asks its user first (the helpers'
flows.py), through the real protocol against the fake Slack; what was posted is read from the fake's record."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from fake_slack import FakeSlack, make_server, text_of
from fastmcp import Client
from mcp_server_core.testing import Asked


def writer(fake: FakeSlack) -> Any:
    return make_server(fake, allow_write=True, write_channels=["#general", "#random"])


async def test_reading_one_channel_then_posting_to_another_asks_and_decline_posts_nothing(fake: FakeSlack) -> None:
    asked = Asked("decline")
    async with Client(writer(fake), elicitation_handler=asked, mode="legacy") as client:
        await client.call_tool("read_messages", {"channel": "#random"})
        result = await client.call_tool_mcp("post_message", {"channel": "C0GENERAL", "text": "from #random: ..."})
    assert result.is_error
    assert "declined" in text_of(result)
    [question] = asked.messages
    assert "channel #random" in question
    assert "post_message would write to channel #general" in question
    assert fake.calls("chat.postMessage") == 0


@pytest.mark.parametrize(
    ("read", "post", "answer", "questions", "posted"),
    [("C0RANDOM0", "#random", "decline", 0, "C0RANDOM0"), ("#random", "#general", "accept", 1, "C0GENERAL")],
    ids=["where-the-session-read-does-not-ask", "accepted-goes-to-the-other-channel"],
)
async def test_a_post_asks_only_when_it_leaves_what_the_session_read(
    fake: FakeSlack, read: str, post: str, answer: Literal["accept", "decline"], questions: int, posted: str
) -> None:
    asked = Asked(answer)  # declining where no question is due proves none was put
    async with Client(writer(fake), elicitation_handler=asked) as client:
        await client.call_tool("read_messages", {"channel": read})
        result = await client.call_tool_mcp("post_message", {"channel": post, "text": "summary"})
    assert not result.is_error, text_of(result)
    assert len(asked.messages) == questions
    assert [p.params["channel"] for p in fake.requests_of("chat.postMessage")] == [posted]


async def test_without_elicitation_the_post_is_refused_with_how_to_allow(fake: FakeSlack) -> None:
    async with Client(writer(fake), mode="legacy") as client:
        await client.call_tool("search_messages", {"query": "lunch"}, raise_on_error=False)
        result = await client.call_tool_mcp(
            "add_reaction", {"channel": "#random", "ts": "1712345683.000000", "emoji": "eyes"}
        )
    assert result.is_error
    assert "cannot ask its user to confirm" in text_of(result)
    assert "--allow-cross-writes" in text_of(result)
    assert fake.calls("reactions.add") == 0


async def test_a_channel_off_the_write_list_is_refused_without_asking(fake: FakeSlack) -> None:
    asked = Asked("accept")
    server = make_server(fake, allow_write=True, write_channels=["#random"])
    async with Client(server, elicitation_handler=asked) as client:
        await client.call_tool("read_messages", {"channel": "#random"})
        result = await client.call_tool_mcp("post_message", {"channel": "#general", "text": "x"})
    assert result.is_error
    assert "is not allowed by this server" in text_of(result)
    assert asked.messages == []
    assert fake.calls("chat.postMessage") == 0


async def test_every_write_tool_declares_its_channel(fake: FakeSlack) -> None:
    server = writer(fake)
    assert [d.name for d in server.toolsets.definitions() if not d.read_only and d.writes is None] == []
