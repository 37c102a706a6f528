"""Every error code Slack documents for the methods the server calls says what to do; retrying is suggested
only where it can help, and a page that is not JSON is summarised, never quoted."""

from __future__ import annotations

import pytest
from fake_slack import (
    DOCUMENTED_ERRORS,
    SERVICE_UNAVAILABLE_PAGE,
    FakeSlack,
    failure_text,
)
from mcp_server_core import RateLimited, Unavailable
from mcp_server_slack.failures import ERRORS, failure_of

JSON = {"Content-Type": "application/json; charset=utf-8"}
DOCUMENTED = sorted({(method, code) for method, codes in DOCUMENTED_ERRORS.items() for code in codes})


def test_every_documented_code_of_every_method_called_has_a_meaning() -> None:
    missing = sorted({code for _, code in DOCUMENTED} - set(ERRORS))
    assert missing == []


@pytest.mark.parametrize(("method", "code"), DOCUMENTED)
def test_each_code_says_what_happened_and_what_to_do(method: str, code: str) -> None:
    failure = failure_of(method, status=200, headers=JSON, data={"ok": False, "error": code, "needed": "chat:write"})
    text = str(failure)
    assert failure.hint, text  # a next step, always
    assert method in text or code in text or "archived" in text  # the model can tell what it was
    retry_said = "retry" in (text + failure.hint).lower()
    # Only Slack's own trouble and rate limits are worth calling again; everything else needs another action.
    assert retry_said == isinstance(failure, Unavailable), (code, text, failure.hint)
    assert "Retry later, or try other arguments" not in text + failure.hint


def test_an_undocumented_code_points_at_the_methods_documentation() -> None:
    failure = failure_of("chat.postMessage", status=200, headers=JSON, data={"ok": False, "error": "brand_new"})
    assert "brand_new" in str(failure)
    assert "docs.slack.dev/reference/methods/chat.postMessage" in str(failure.hint)


WRITABLE = {"allow_write": True, "write_channels": ["#random"]}


async def test_post_messages_own_rate_limit_is_the_familys_rate_limited(fake: FakeSlack) -> None:
    fake.fail("chat.postMessage", "rate_limited")  # HTTP 200, ok: false, no Retry-After
    text = await failure_text(fake, "post_message", {"channel": "#random", "text": "hi"}, **WRITABLE)
    assert "posted too many messages" in text
    assert "Retry after 30 s." in text
    failure = failure_of("chat.postMessage", status=200, headers=JSON, data={"ok": False, "error": "rate_limited"})
    assert isinstance(failure, RateLimited)


async def test_codes_that_retrying_cannot_fix_say_what_to_do_instead(fake: FakeSlack) -> None:
    fake.fail("chat.postMessage", "team_access_not_granted")
    text = await failure_text(fake, "post_message", {"channel": "#random", "text": "hi"}, **WRITABLE)
    assert "not been granted access" in text
    assert "admin must add the app" in text
    assert "retry" not in text.lower()
    fake.fail("reactions.add", "too_many_reactions")
    text = await failure_text(
        fake, "add_reaction", {"channel": "#random", "ts": "1712345698.000000", "emoji": "eyes"}, **WRITABLE
    )
    assert "limit of reactions" in text
    assert "retry later" not in text.lower()


async def test_an_html_503_is_summarised_by_status_without_its_markup(fake: FakeSlack) -> None:
    fake.fail_with_page("conversations.history", status=503, times=2)  # slack-sdk retries a 503 once
    text = await failure_text(fake, "read_messages", {"channel": "C0RANDOM0"})
    assert "HTTP 503" in text
    assert "instead of JSON" in text
    assert "status.slack.com" in text
    for markup in ("<", "DOCTYPE", "Service Temporarily", "track("):
        assert markup not in text
    assert fake.calls("conversations.history") == 2
    fake.fail_with_page("conversations.history", status=404, page="<html>Not Found</html>")
    assert "SLACK_API_URL" in await failure_text(fake, "read_messages", {"channel": "C0RANDOM0"})
    assert "<html>" in SERVICE_UNAVAILABLE_PAGE


def test_the_fake_answers_only_codes_slack_documents(fake: FakeSlack) -> None:
    with pytest.raises(ValueError, match="does not document"):
        fake.fail("conversations.history", "too_many_reactions")


async def test_slacks_own_explanation_of_a_refused_request_is_passed_on(fake: FakeSlack) -> None:
    # Slack explains an invalid_arguments in response_metadata.messages (docs.slack.dev/reference/methods/
    # blocks.validate shows one): it is what a bug report needs, beside the method and code.
    explained = {"messages": ["[ERROR] missing required field: channel", "[ERROR]\n  unknown field: x\u200b"]}
    fake.fail("chat.postMessage", "invalid_arguments", response_metadata=explained)
    text = await failure_text(fake, "post_message", {"channel": "#random", "text": "hi"}, **WRITABLE)
    assert "bug in mcp-server-slack" in text
    assert "Slack says: [ERROR] missing required field: channel; [ERROR] unknown field: x." in text
    long = failure_of(
        "chat.postMessage",
        status=200,
        headers=JSON,
        data={"ok": False, "error": "invalid_blocks", "response_metadata": {"messages": ["y" * 5000]}},
    )
    assert len(str(long)) < 600
