"""Slack's failures become isError results that say what to do; 429 is waited out once, within a budget."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

import pytest
from fake_slack import BOT_TOKEN, USER_TOKEN, FakeSlack, failure_text, make_server, text_of
from fastmcp import Client
from mcp_server_core.testing import recorded_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind


async def test_channel_not_found_points_to_list_channels(fake: FakeSlack) -> None:
    text = await failure_text(fake, "read_messages", {"channel": "C0MISSING"})
    assert "channel_not_found" in text
    assert "list_channels" in text


async def test_unknown_channel_name_suggests_close_ones(fake: FakeSlack) -> None:
    text = await failure_text(fake, "read_messages", {"channel": "#genral"})
    assert "No channel named '#genral'" in text
    assert "Did you mean 'general'" in text


async def test_not_in_channel_says_to_invite_the_app(fake: FakeSlack) -> None:
    text = await failure_text(fake, "read_messages", {"channel": "#outside"})
    assert "not a member" in text
    assert "/invite" in text


async def test_missing_scope_names_the_scope_needed(fake: FakeSlack) -> None:
    fake.missing_scopes.add("users:read.email")
    text = await failure_text(fake, "list_users", {"query": "alice@example.com"})
    assert "lacks the scope users:read.email" in text
    assert "reinstall" in text


async def test_invalid_auth_says_to_check_the_token_without_showing_it(fake: FakeSlack) -> None:
    fake.tokens = {}
    text = await failure_text(fake, "list_channels", {})
    assert "invalid_auth" in text
    assert "SLACK_BOT_TOKEN" in text


async def test_a_short_retry_after_is_waited_out_once(fake: FakeSlack) -> None:
    fake.fail("conversations.history", "ratelimited", status=429, retry_after=1)
    started = time.monotonic()
    async with Client(make_server(fake)) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "C0RANDOM0"})
    assert not result.is_error, text_of(result)
    assert time.monotonic() - started >= 1.0
    assert fake.calls("conversations.history") == 2


async def test_a_long_retry_after_fails_at_once_saying_when(fake: FakeSlack) -> None:
    fake.fail("conversations.history", "ratelimited", status=429, retry_after=120)
    started = time.monotonic()
    text = await failure_text(fake, "read_messages", {"channel": "C0RANDOM0"})
    assert time.monotonic() - started < 5
    assert "rate-limited" in text
    assert "Retry after 120 s." in text
    assert fake.calls("conversations.history") == 1


async def test_repeated_429s_stop_after_one_retry(fake: FakeSlack) -> None:
    fake.fail("conversations.history", "ratelimited", status=429, retry_after=0, times=5)
    text = await failure_text(fake, "read_messages", {"channel": "C0RANDOM0"})
    assert "Retry after 0 s." in text
    assert fake.calls("conversations.history") == 2


async def test_an_unreachable_slack_is_unavailable(fake: FakeSlack) -> None:
    fake.url = "http://127.0.0.1:9/api/"
    text = await failure_text(fake, "list_channels", {}, timeout_s=2)
    assert "unreachable at http://127.0.0.1:9/api/" in text


async def test_tokens_never_reach_the_log(fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake.tokens = {}
    await failure_text(fake, "list_channels", {})
    fake.url = "http://127.0.0.1:9/api/"
    await failure_text(fake, "list_channels", {}, timeout_s=1)
    assert any(r.name.startswith("mcp_server_slack.sdk") for r in caplog.records)  # slack-sdk's debug lines
    for record in caplog.records:  # raw, before the server's redacting formatter would have a chance
        line = record.getMessage() + (caplog.text or "")
        assert BOT_TOKEN not in line
        assert USER_TOKEN not in line


async def test_a_server_error_is_retried_once(fake: FakeSlack) -> None:
    fake.fail("conversations.history", "internal_error", status=500)
    async with Client(make_server(fake)) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "C0RANDOM0"})
    assert not result.is_error, text_of(result)
    assert fake.calls("conversations.history") == 2
    fake.fail("conversations.history", "internal_error", status=503, times=2)
    text = await failure_text(fake, "read_messages", {"channel": "C0RANDOM0"})
    assert "internal_error" in text
    assert "Retry in a minute" in text


async def test_a_user_token_alone_reads_and_searches(fake: FakeSlack) -> None:
    async with Client(make_server(fake, bot=False)) as client:
        read = await client.call_tool_mcp("read_messages", {"channel": "#random"})
        found = await client.call_tool_mcp("search_messages", {"query": "lunch"})
    assert not read.is_error, text_of(read)
    assert not found.is_error, text_of(found)
    assert {r.token_kind for r in fake.requests} == {"user"}


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


async def test_each_slack_request_is_a_child_span_named_by_its_method(
    fake: FakeSlack, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    async with Client(make_server(fake)) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "C0RANDOM0", "oldest": "1712345000.000000"})
    assert not result.is_error, text_of(result)
    finished = spans.get_finished_spans()
    [history] = [s for s in finished if s.name == "slack conversations.history"]
    assert history.kind == SpanKind.CLIENT
    assert dict(history.attributes or {}) == {
        "mcp.upstream": "slack",
        "mcp.upstream.operation": "conversations.history",
    }
    by_id = {s.context.span_id: s for s in finished}
    assert history.parent is not None
    call = by_id[history.parent.span_id]  # inside the span of the tools/call that made it
    assert dict(call.attributes or {}).get("gen_ai.tool.name") == "read_messages"
    text = json.dumps([dict(s.attributes or {}) for s in finished], default=str)
    for value in ("C0RANDOM0", "1712345000", BOT_TOKEN, USER_TOKEN):
        assert value not in text


async def test_a_warning_beside_a_success_reaches_the_log_and_the_answer_stands(
    fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake.warn("conversations.history", "missing_charset,superfluous_charset")
    async with Client(make_server(fake)) as client:
        result = await client.call_tool_mcp("read_messages", {"channel": "C0RANDOM0"})
    assert not result.is_error, text_of(result)
    assert "lunch?" in text_of(result)
    warned = [r.getMessage() for r in caplog.records if r.name == "mcp_server_slack.transport"]
    assert warned == [
        "Slack warned on conversations.history: missing_charset,superfluous_charset "
        "(docs.slack.dev/reference/methods/conversations.history lists its warnings)"
    ]
