"""Names come from a lazily warmed, bounded cache: a page of messages costs its history call, not one per message."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from fake_slack import FakeSlack, make_server, text_of
from fastmcp import Client


def _methods(fake: FakeSlack) -> Counter[str]:
    return Counter(r.method for r in fake.requests)


async def _read_busy(client: Client[Any]) -> dict[str, Any]:
    result = await client.call_tool("read_messages", {"channel": "C0BUSY000", "limit": 100})
    return result.structured_content or {}


async def test_a_page_of_100_messages_from_30_people_costs_three_calls_cold_and_one_warm(fake: FakeSlack) -> None:
    async with Client(make_server(fake)) as client:
        cold = await _read_busy(client)
        cold_calls = _methods(fake)
        fake.reset_requests()
        warm = await _read_busy(client)
        warm_calls = _methods(fake)
    assert len(cold["messages"]) == 100
    assert len({m["user"] for m in cold["messages"]}) == 30
    assert all(m["author"].startswith("@user0") for m in cold["messages"])
    assert cold_calls == {"conversations.history": 1, "conversations.info": 1, "users.list": 1}
    assert warm_calls == {"conversations.history": 1}
    assert warm["messages"] == cold["messages"]


async def test_names_expire_with_the_ttl(fake: FakeSlack) -> None:
    async with Client(make_server(fake, cache_ttl_s=0.2)) as client:
        await _read_busy(client)
        fake.users[5]["profile"]["display_name"] = "renamed"  # U00000001, the author of every 30th message
        await asyncio.sleep(0.3)
        fake.reset_requests()
        page = await _read_busy(client)
    assert _methods(fake) == {"conversations.history": 1, "conversations.info": 1, "users.list": 1}
    assert "@renamed" in {m["author"] for m in page["messages"]}


async def test_the_cache_stays_within_its_cap_and_still_names_the_page(fake: FakeSlack) -> None:
    server = make_server(fake, max_cached=100)
    async with Client(server) as client:
        page = await _read_busy(client)
        listed = await client.call_tool("list_users", {"limit": 500})
    assert all(m["author"].startswith("@user0") for m in page["messages"])
    assert len(server.directory._users.items) <= 100
    assert "Directory still loading" in "".join(getattr(b, "text", "") for b in listed.content)


def _random_with_someone_unlisted(fake: FakeSlack, *messages: tuple[str, str]) -> None:
    """#random holds these (author, text) messages, newest first; W0EXTERNAL, of another organisation, is left
    out of users.list as Slack leaves such people out, and users.info names them."""
    fake.messages["C0RANDOM0"] = [
        {"type": "message", "user": user, "text": text, "ts": f"{1712345000 + len(messages) - n}.000000"}
        for n, (user, text) in enumerate(messages, start=1)
    ]
    fake.users.append({"id": "W0EXTERNAL", "name": "ext", "real_name": "Ext Ernal", "profile": {"display_name": "ext"}})
    fake.unlisted.add("W0EXTERNAL")


async def test_a_mention_of_someone_outside_the_listing_is_looked_up_once(fake: FakeSlack) -> None:
    _random_with_someone_unlisted(fake, ("U0BOB0000", "ask <@W0EXTERNAL>"), ("U0BOB0000", "or <@W0EXTERNAL> again"))
    async with Client(make_server(fake)) as client:
        result = await client.call_tool("read_messages", {"channel": "C0RANDOM0"})
    texts = [m["text"] for m in (result.structured_content or {})["messages"]]
    assert texts == ["ask @ext", "or @ext again"]
    assert _methods(fake)["users.list"] == 2  # the whole listing, then
    assert fake.requests_of("users.info")[0].params["user"] == "W0EXTERNAL"  # one lookup, not one per mention
    assert fake.calls("users.info") == 1


async def test_someone_slack_cannot_name_leaves_only_them_unnamed(fake: FakeSlack) -> None:
    # users.info answers for one person: a user_not_found (an ID of a workspace that left a shared channel) must
    # neither stop the lookup of the next person nor be reported as a failed listing.
    _random_with_someone_unlisted(fake, ("W0ABSENT0", "from a workspace gone"), ("W0EXTERNAL", "from a shared one"))
    async with Client(make_server(fake)) as client:
        result = await client.call_tool("read_messages", {"channel": "C0RANDOM0"})
    assert [m["author"] for m in (result.structured_content or {})["messages"]] == ["W0ABSENT0", "@ext"]
    assert [r.params["user"] for r in fake.requests_of("users.info")] == ["W0ABSENT0", "W0EXTERNAL"]
    text = text_of(result)
    assert "the user listing failed" not in text
    assert "1 name(s) shown as user IDs: Slack did not say who they are. Slack found no such user" in text


async def test_a_channel_created_after_the_listing_is_found_by_name(fake: FakeSlack) -> None:
    from mcp_server_slack import directory as directory_module

    server = make_server(fake)
    async with Client(server) as client:
        await client.call_tool("list_channels", {})
        fake.add_channel("C0LATER00", "created-later")
        soon = await client.call_tool_mcp("read_messages", {"channel": "#created-later"})
        assert soon.is_error  # listed moments ago: a typo must not relist a huge workspace each time
        server.directory._listed_at -= directory_module.RELIST_AFTER_S
        later = await client.call_tool_mcp("read_messages", {"channel": "#created-later"})
    assert not later.is_error
    assert fake.calls("conversations.list") == 4  # two pages, then two pages again


async def test_concurrent_cold_reads_warm_the_names_once(fake: FakeSlack) -> None:
    async with Client(make_server(fake)) as client:
        pages = await asyncio.gather(*(_read_busy(client) for _ in range(4)))
    assert all(len(page["messages"]) == 100 for page in pages)
    assert fake.calls("users.list") == 1
    assert fake.calls("conversations.history") == 4


async def test_a_rate_limited_name_listing_still_returns_the_page(fake: FakeSlack) -> None:
    fake.fail("users.list", "ratelimited", status=429, retry_after=120)
    async with Client(make_server(fake)) as client:
        first = await _read_busy(client)
        second = await _read_busy(client)
    assert {m["author"] for m in first["messages"]} == {f"U{n:08d}" for n in range(1, 31)}  # IDs, not failure
    assert all(m["author"].startswith("@user0") for m in second["messages"])


async def test_names_missing_for_a_rate_limit_are_explained_once(fake: FakeSlack) -> None:
    fake.fail("users.list", "ratelimited", status=429, retry_after=120)
    async with Client(make_server(fake)) as client:
        cold = await client.call_tool("read_messages", {"channel": "C0BUSY000", "limit": 100})
        warm = await client.call_tool("read_messages", {"channel": "C0BUSY000", "limit": 100})
    text = text_of(cold)
    note = "name(s) shown as user IDs: Slack rate-limited the user listing (users.list); call again in 120 s"
    assert text.count(note) == 1  # once for the page, not per message
    assert "[untrusted data: message by U00000001" in text
    assert "rate-limited" not in text_of(warm)
    assert "note" not in (cold.structured_content or {})  # the outputSchema stays as it was


async def test_members_missing_names_for_a_rate_limit_say_why(fake: FakeSlack) -> None:
    fake.fail("users.list", "ratelimited", status=429, retry_after=120)
    async with Client(make_server(fake)) as client:
        result = await client.call_tool("list_users", {"channel": "#random"})
    text = text_of(result)
    assert text.startswith("Members of #random (C0RANDOM0).\n3 name(s) shown as user IDs: Slack rate-limited")
    assert "U0ALICE00 · @U0ALICE00" in text


async def test_a_search_with_unnamed_authors_says_why(fake: FakeSlack) -> None:
    fake.missing_scopes.add("users:read")
    async with Client(make_server(fake)) as client:
        result = await client.call_tool("search_messages", {"query": "lunch"})
    text = text_of(result)
    assert "name(s) shown as user IDs: the user listing failed." in text
    assert "users:read" in text  # the scope to add, from the failure itself


async def test_reads_and_searches_report_progress_to_a_client_that_asked(fake: FakeSlack) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    fake.latency_s["users.list"] = 0.6  # slower than the helpers' interval, so each page is heard
    async with Client(make_server(fake)) as client:
        await client.call_tool("read_messages", {"channel": "C0BUSY000", "limit": 100}, progress_handler=on_progress)
        read = list(heard)
        await client.call_tool("search_messages", {"query": "status update"}, progress_handler=on_progress)
        searched = heard[len(read) :]
        await client.call_tool("read_messages", {"channel": "C0BUSY000"})  # no progress token: nothing is sent
    assert read[0][2] == "100 message(s) read; naming their authors"
    assert any(str(message).startswith("Listing people for names: 200 so far") for _, _, message in read)
    assert searched[0] == (1, 8, "Search page 1 of 8 read; naming the authors of 20 hit(s)")
    assert len(heard) == len(read) + len(searched)
