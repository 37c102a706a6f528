"""Writes exist only with --allow-write and an allow-list, go only there, unfurl nothing, broadcast nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fake_slack import FakeSlack, make_server, text_of
from fastmcp import Client

THREAD = "1712345778.000000"
LUNCH = "1712345683.000000"  # "lunch?" in #random
WRITES = {"post_message", "reply_to_thread", "add_reaction"}


async def _names(server: Any) -> set[str]:
    async with Client(server) as client:
        return {t.name for t in await client.list_tools()}


async def test_write_tools_are_absent_unless_enabled_with_channels(fake: FakeSlack) -> None:
    assert not await _names(make_server(fake)) & WRITES
    assert not await _names(make_server(fake, write_channels=["#random"])) & WRITES
    assert await _names(make_server(fake, allow_write=True, write_channels=["#random"])) >= WRITES
    assert not await _names(make_server(fake, allow_write=True, write_channels=["#random"], read_only=True)) & WRITES
    with pytest.raises(ValueError, match="--write-channels"):
        make_server(fake, allow_write=True)


async def test_write_annotations_tell_the_client_what_they_do(fake: FakeSlack) -> None:
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        tools = {t.name: t.annotations for t in await client.list_tools()}
    for name in WRITES:
        hints = tools[name]
        assert hints is not None
        assert hints.read_only_hint is False
        assert hints.destructive_hint is False  # adds a message or a reaction, removes nothing
        assert hints.open_world_hint is True
    assert tools["post_message"].idempotent_hint is False  # type: ignore[union-attr]
    assert tools["add_reaction"].idempotent_hint is True  # type: ignore[union-attr]


async def test_every_post_goes_to_an_allowed_id_with_unfurling_off(fake: FakeSlack) -> None:
    server = make_server(fake, allow_write=True, write_channels=["#general", "C0RANDOM0"])
    async with Client(server) as client:
        first = await client.call_tool("post_message", {"channel": "general", "text": "see https://example.com"})
        second = await client.call_tool(
            "reply_to_thread", {"channel": "C0GENERAL", "thread_ts": THREAD, "text": "on it", "also_to_channel": True}
        )
        third = await client.call_tool("post_message", {"channel": "<#C0RANDOM0|random>", "text": "hello"})
    posts = fake.requests_of("chat.postMessage")
    assert [p.params["channel"] for p in posts] == ["C0GENERAL", "C0GENERAL", "C0RANDOM0"]
    for post in posts:
        assert post.content_type.startswith("application/json")
        assert post.params["unfurl_links"] is False
        assert post.params["unfurl_media"] is False
        assert "link_names" not in post.params
    assert posts[1].params["thread_ts"] == THREAD
    assert posts[1].params["reply_broadcast"] is True
    assert "thread_ts" not in posts[0].params
    assert "Posted to #general (C0GENERAL): ts=" in text_of(first)
    assert f"Posted in thread {THREAD} of #general" in text_of(second)
    assert (third.structured_content or {})["channel"] == "#random (C0RANDOM0)"
    assert fake.messages["C0GENERAL"][0]["text"] == "on it"


async def test_a_channel_off_the_list_is_refused_before_slack_hears_of_it(fake: FakeSlack) -> None:
    server = make_server(fake, allow_write=True, write_channels=["#random"])
    async with Client(server) as client:
        by_name = await client.call_tool_mcp("post_message", {"channel": "#general", "text": "x"})
        by_id = await client.call_tool_mcp("post_message", {"channel": "C0GENERAL", "text": "x"})
        reaction = await client.call_tool_mcp(
            "add_reaction", {"channel": "C0GENERAL", "ts": "1712345688.000000", "emoji": "eyes"}
        )
    for result in (by_name, by_id, reaction):
        assert result.is_error
        assert "is not allowed by this server" in text_of(result)
        assert "#random" in text_of(result)
    assert fake.calls("chat.postMessage") == 0
    assert fake.calls("reactions.add") == 0


async def test_a_renamed_or_missing_allowed_name_allows_nothing(fake: FakeSlack) -> None:
    server = make_server(fake, allow_write=True, write_channels=["#gone-channel"])
    async with Client(server) as client:
        result = await client.call_tool_mcp("post_message", {"channel": "#random", "text": "x"})
    assert result.is_error
    assert fake.calls("chat.postMessage") == 0


# Issue 28: each went to Slack verbatim, and each notifies people there.
MARKUP = [
    ("<!subteam^S01SRE|@sre> please look now", "&lt;!subteam^S01SRE|@sre&gt; please look now"),
    ("<!subteam^S0ALLSTAFF>", "&lt;!subteam^S0ALLSTAFF&gt;"),
    ("legacy <!group>", "legacy &lt;!group&gt;"),
    ("<!channel > look", "&lt;!channel &gt; look"),
    ("hey <!here|here> and <!everyone>", "hey &lt;!here|here&gt; and &lt;!everyone&gt;"),
    ("<@U0ALICE00> ping", "&lt;@U0ALICE00&gt; ping"),
    ("a &amp; b < c > d & e", "a &amp;amp; b &lt; c &gt; d &amp; e"),
]


@pytest.mark.parametrize(("text", "sent"), MARKUP)
async def test_markup_in_the_text_reaches_slack_as_plain_text(fake: FakeSlack, text: str, sent: str) -> None:
    # Even with broadcasts allowed: mentions come only from the mention argument.
    server = make_server(fake, allow_write=True, write_channels=["#random"], allow_broadcast=True)
    async with Client(server) as client:
        posted = await client.call_tool("post_message", {"channel": "#random", "text": text})
        replied = await client.call_tool(
            "reply_to_thread", {"channel": "#random", "thread_ts": LUNCH, "text": text, "also_to_channel": True}
        )
    assert [p.params["text"] for p in fake.requests_of("chat.postMessage")] == [sent, sent]
    assert [m["text"] for m in fake.messages["C0RANDOM0"][:2]] == [sent, sent]
    for result in (posted, replied):
        noted = text_of(result).startswith("(Mention markup in the text was posted as plain text; pass mention")
        assert noted == ("<@" in text or "<!" in text), text_of(result)


async def test_mentions_go_only_through_the_mention_argument_and_its_allow_list(fake: FakeSlack) -> None:
    server = make_server(fake, allow_write=True, write_channels=["#random"], allow_mentions=["U0ALICE00", "S01SRE"])
    async with Client(server) as client:
        posted = await client.call_tool(
            "post_message",
            {"channel": "#random", "text": "deploy done", "mention": ["<@U0ALICE00>", "<!subteam^S01SRE|@sre>"]},
        )
        refused = {
            str(mention): await client.call_tool_mcp(
                "post_message", {"channel": "#random", "text": "look", "mention": mention}
            )
            for mention in (["here"], ["<!channel >"], ["U0BOB0000"], ["S0ALLSTAFF"], ["U0ALICE00", "everyone"], ["#x"])
        }
    assert not posted.is_error
    assert [p.params["text"] for p in fake.requests_of("chat.postMessage")] == [
        "<@U0ALICE00> <!subteam^S01SRE> deploy done"
    ]
    for mention, result in refused.items():
        assert result.is_error, mention
        assert "unexpectedly" not in text_of(result)
    assert "It may mention: S01SRE, U0ALICE00." in text_of(refused["['here']"])
    assert "--allow-broadcast" in text_of(refused["['here']"])
    assert [m["text"] for m in fake.messages["C0RANDOM0"]].count("look") == 0
    broadcasting = make_server(fake, allow_write=True, write_channels=["#random"], allow_broadcast=True)
    async with Client(broadcasting) as client:
        await client.call_tool("post_message", {"channel": "#random", "text": "standup", "mention": ["@here"]})
    assert fake.requests_of("chat.postMessage")[-1].params["text"] == "<!here> standup"


@pytest.mark.parametrize(
    "text",
    [
        "<https://evil.test/collect?d=secret|https://docs.acme.test/runbook>",
        "<https://evil.test/collect|docs.acme.test/runbook>",
        "<https://evil.test/x|see www.acme.test>",
        "<mailto:attacker@evil.test|security@acme.test>",
        "<https://evil.test/x|d\u043ecs.acme.test>",  # a Cyrillic o
        "<https://evil.test/x|docs\uff0eacme\uff0etest>",  # fullwidth dots
    ],
)
async def test_a_link_labelled_with_another_address_is_refused(fake: FakeSlack, text: str) -> None:
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        result = await client.call_tool_mcp("post_message", {"channel": "#random", "text": text})
    assert result.is_error
    assert "is labelled with another address" in text_of(result)
    assert fake.calls("chat.postMessage") == 0


async def test_a_link_keeps_its_words_or_its_own_address_as_label(fake: FakeSlack) -> None:
    text = (
        "see <https://docs.acme.test/run?a=1&b=2|the runbook> or <https://www.acme.test/x|acme.test/x> <https://a.test>"
    )
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        await client.call_tool("post_message", {"channel": "#random", "text": text})
    assert fake.requests_of("chat.postMessage")[0].params["text"] == (
        "see <https://docs.acme.test/run?a=1&amp;b=2|the runbook> or <https://www.acme.test/x|acme.test/x> <https://a.test>"
    )


async def test_add_reaction_is_idempotent_and_checks_the_emoji(fake: FakeSlack) -> None:
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        arguments = {"channel": "#random", "ts": "1712345683.000000", "emoji": ":tada:"}
        first = await client.call_tool("add_reaction", arguments)
        again = await client.call_tool("add_reaction", arguments)
        unknown = await client.call_tool_mcp("add_reaction", {**arguments, "emoji": "no_such_emoji"})
    assert "Added :tada:" in text_of(first)
    assert ":tada: was already on" in text_of(again)
    assert unknown.is_error
    assert "invalid_name" in text_of(unknown)
    assert [r.params["name"] for r in fake.requests_of("reactions.add")] == ["tada", "tada", "no_such_emoji"]
    assert fake.messages["C0RANDOM0"][0]["reactions"] == [{"name": "tada", "users": ["U0BOT0000"], "count": 1}]


async def test_posting_where_the_bot_is_not_a_member_says_to_invite_it(fake: FakeSlack) -> None:
    async with Client(make_server(fake, allow_write=True, write_channels=["C0OUTSIDE"])) as client:
        result = await client.call_tool_mcp("post_message", {"channel": "C0OUTSIDE", "text": "hello?"})
    assert result.is_error
    assert "/invite" in text_of(result)


@pytest.mark.parametrize("status", [500, 503])
async def test_a_post_that_fails_on_slacks_side_is_sent_once_and_says_to_check(fake: FakeSlack, status: int) -> None:
    # Slack may have posted before answering 5xx: a retry nobody asked for could post the message twice.
    fake.fail("chat.postMessage", "internal_error", status=status)
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        result = await client.call_tool_mcp("post_message", {"channel": "#random", "text": "deploy done"})
        reread = await client.call_tool_mcp("read_messages", {"channel": "#random"})
    assert result.is_error
    assert "may have been done" in text_of(result)
    assert "read_messages" in text_of(result)
    assert len(fake.requests_of("chat.postMessage")) == 1
    assert "deploy done" not in text_of(reread)


async def test_a_read_that_fails_on_slacks_side_is_still_tried_once_more(fake: FakeSlack) -> None:
    fake.fail("conversations.history", "internal_error", status=500)
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "#random"})
    assert not result.is_error, text_of(result)
    assert fake.calls("conversations.history") == 2


@pytest.mark.parametrize(
    ("tool", "method", "arguments"),
    [
        ("post_message", "chat.postMessage", {"channel": "#random", "text": "deploy done"}),
        ("reply_to_thread", "chat.postMessage", {"channel": "#random", "thread_ts": LUNCH, "text": "deploy done"}),
        ("add_reaction", "reactions.add", {"channel": "#random", "ts": LUNCH, "emoji": "tada"}),
    ],
)
async def test_a_write_whose_connection_drops_is_sent_once_and_says_to_check(
    fake: FakeSlack, tool: str, method: str, arguments: dict[str, Any]
) -> None:
    # Slack did the write and the answer was lost: slack-sdk's connection-error retry would do it twice.
    fake.drop(method)
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        result = await client.call_tool_mcp(tool, arguments)
        reread = await client.call_tool_mcp("read_messages", {"channel": "#random"})
    assert result.is_error
    assert "may have been done" in text_of(result)
    assert "read_messages" in text_of(result)
    assert "Traceback" not in text_of(result)
    assert len(fake.requests_of(method)) == 1
    posted = [m for m in fake.messages["C0RANDOM0"] if m.get("text") == "deploy done"]
    assert len(posted) == (0 if tool == "add_reaction" else 1)
    assert text_of(reread).count("deploy done") == len(posted)
    if tool == "add_reaction":
        lunch = next(m for m in fake.messages["C0RANDOM0"] if m["ts"] == LUNCH)
        assert lunch["reactions"] == [{"name": "tada", "users": ["U0BOT0000"], "count": 1}]


async def test_a_read_whose_connection_drops_is_tried_once_more_and_answers(fake: FakeSlack) -> None:
    fake.drop("conversations.history")
    async with Client(make_server(fake)) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "#random"})
    assert not result.is_error, text_of(result)
    assert "lunch?" in text_of(result)
    assert fake.calls("conversations.history") == 2


async def test_a_post_that_times_out_is_sent_once_and_says_to_check(fake: FakeSlack) -> None:
    fake.latency_s["chat.postMessage"] = 3.0  # Slack is still at it when the server stops waiting
    server = make_server(fake, allow_write=True, write_channels=["#random"], timeout_s=0.5)
    async with Client(server) as client:
        result = await client.call_tool_mcp("post_message", {"channel": "#random", "text": "deploy done"})
    assert result.is_error
    assert "no answer came within 0.5 s; it may have been done" in text_of(result)
    assert "read_messages" in text_of(result)
    assert len(fake.requests_of("chat.postMessage")) == 1


async def test_a_post_whose_answer_is_cut_short_was_done_once_and_says_to_check(fake: FakeSlack) -> None:
    # Issue 28: "failed unexpectedly (JSONDecodeError)", without the advice a lost answer to a write needs.
    fake.cut("chat.postMessage", keep=60)
    async with Client(make_server(fake, allow_write=True, write_channels=["#random"])) as client:
        result = await client.call_tool_mcp("post_message", {"channel": "#random", "text": "deploy done"})
    assert result.is_error
    assert "Slack's answer to chat.postMessage was cut short or is not JSON; it may have been done." in text_of(result)
    assert "read_messages" in text_of(result)
    assert len(fake.requests_of("chat.postMessage")) == 1
    assert [m["text"] for m in fake.messages["C0RANDOM0"]].count("deploy done") == 1


async def test_a_read_whose_answer_is_cut_short_says_so_and_a_retry_answers(fake: FakeSlack) -> None:
    fake.cut("conversations.history", keep=300)
    async with Client(make_server(fake)) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "#random"})
        again = await client.call_tool_mcp("read_messages", {"channel": "#random"})
    assert result.is_error
    assert text_of(result) == (
        "Slack's answer to conversations.history was cut short or is not JSON. "
        "Retry shortly; if it persists, a proxy between this server and Slack may be cutting answers."
    )
    assert "lunch?" in text_of(again)
