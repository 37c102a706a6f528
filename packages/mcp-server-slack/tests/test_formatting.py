"""Slack mrkdwn and timestamps as a model reads them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from mcp_server_core import InvalidArgument
from mcp_server_slack.formatting import mentioned_ids, parse_time, render_mrkdwn, ts_to_iso

USERS = {"U0ALICE00": "alice"}
CHANNELS = {"C0GENERAL": "general"}


def render(text: str) -> str:
    return render_mrkdwn(text, user_name=USERS.get, channel_name=CHANNELS.get)


@pytest.mark.parametrize(
    ("wire", "plain"),
    [
        ("hi <@U0ALICE00>", "hi @alice"),
        ("hi <@U0NOBODY0|old name>", "hi @old name"),
        ("hi <@U0NOBODY0>", "hi @U0NOBODY0"),
        ("in <#C0GENERAL>", "in #general"),
        ("in <#C0OTHER00|other>", "in #other"),
        ("<!here> <!channel> <!everyone>", "@here @channel @everyone"),
        ("<!subteam^S0TEAM|@design>", "@design"),
        ("<!date^1392734382^{date_short}|Feb 18, 2014>", "Feb 18, 2014"),
        ("<https://example.com|the docs>", "the docs (https://example.com)"),
        ("<https://example.com>", "https://example.com"),
        ("<https://example.com|https://example.com>", "https://example.com"),
        ("<mailto:a@example.com|a@example.com>", "a@example.com"),
        ("a &lt;b&gt; &amp; c", "a <b> & c"),
        ("&amp;lt; stays literal", "&lt; stays literal"),
        ("*bold* _italic_ ~gone~", "bold italic gone"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("`*not bold*` and ```_kept_```", "`*not bold*` and ```_kept_```"),
        ("<https://x.example/?a=1&amp;b=2|q&amp;a>", "q&a (https://x.example/?a=1&b=2)"),
    ],
)
def test_mrkdwn_renders_as_plain_text(wire: str, plain: str) -> None:
    assert render(wire) == plain


def test_mentions_are_collected_for_one_batch() -> None:
    users, channels = mentioned_ids(["<@U0ALICE00> <@W0EXTERN0|x>", "<#C0GENERAL|general> <@U0ALICE00>"])
    assert users == {"U0ALICE00", "W0EXTERN0"}
    assert channels == {"C0GENERAL"}


def test_ts_to_iso() -> None:
    assert ts_to_iso("1712345678.000100") == "2024-04-05T19:34:38Z"
    assert ts_to_iso(None) is None
    assert ts_to_iso("not a ts") is None


def test_parse_time_accepts_ts_iso_and_spans() -> None:
    now = datetime(2024, 4, 5, 12, 0, tzinfo=UTC)
    assert parse_time("1712345678.000100") == "1712345678.000100"
    assert parse_time("2024-04-05") == f"{datetime(2024, 4, 5, tzinfo=UTC).timestamp():.6f}"
    assert parse_time("2024-04-05T10:00:00Z") == f"{datetime(2024, 4, 5, 10, tzinfo=UTC).timestamp():.6f}"
    assert parse_time("2024-04-05T12:00:00+02:00") == f"{datetime(2024, 4, 5, 10, tzinfo=UTC).timestamp():.6f}"
    assert parse_time("2h", now=now) == f"{datetime(2024, 4, 5, 10, tzinfo=UTC).timestamp():.6f}"
    assert parse_time("7d", now=now) == f"{datetime(2024, 3, 29, 12, tzinfo=UTC).timestamp():.6f}"
    with pytest.raises(InvalidArgument, match="is not a time"):
        parse_time("last tuesday")
