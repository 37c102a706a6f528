"""Which of a message's two texts Slack shows, and Block Kit's text objects turned into wire text."""

from __future__ import annotations

from mcp_server_slack.blocks import blocks_to_mrkdwn, shows_blocks

RICH = [
    {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": "hi"}]}]}
]


def test_a_persons_message_keeps_its_text_and_an_apps_shows_its_blocks() -> None:
    assert not shows_blocks({"text": "hi", "blocks": RICH})  # rich_text says what text says
    assert shows_blocks({"text": "", "blocks": RICH})
    assert shows_blocks(
        {"text": "fallback", "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "H"}}]}
    )
    assert not shows_blocks({"text": "hi"})


def test_plain_text_is_escaped_and_mrkdwn_kept_as_wire_text() -> None:
    blocks = [
        {"type": "section", "text": {"type": "plain_text", "text": "a < b & c"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "<@U0ALICE00> &lt;3"}},
        {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Approve"}}]},
        {
            "type": "rich_text",
            "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "x", "style": {"code": True}}]}
            ],
        },
    ]
    assert blocks_to_mrkdwn(blocks) == "a &lt; b &amp; c\n<@U0ALICE00> &lt;3\n`x`"


def test_a_senders_blocks_of_any_shape_cost_what_they_weigh() -> None:
    """Blocks are the sender's JSON: an indent of a billion made a gigabyte of spaces, a string offset or a list
    item that is no object failed the whole read. Counts are kept within Slack's bounds, wrong shapes skipped."""
    hostile = [
        {
            "type": "rich_text",
            "elements": [
                {
                    "type": "rich_text_list",
                    "style": "ordered",
                    "indent": 10**9,
                    "offset": 10**12,
                    "elements": [
                        {"type": "rich_text_section", "elements": [{"type": "text", "text": "a"}]},
                        "not an item",
                        None,
                    ],
                },
                {"type": "rich_text_list", "style": "bullet", "indent": "x", "offset": float("nan"), "elements": 7},
                {"type": "rich_text_quote", "elements": "text where a list belongs"},
            ],
        },
        {"type": "section", "fields": {"type": "mrkdwn", "text": "not a list"}},
        {"type": "context", "elements": [None, "x", {"type": "mrkdwn", "text": "ok"}]},
    ]
    text = blocks_to_mrkdwn(hostile)
    assert len(text) < 200, len(text)
    assert text.splitlines()[0] == "1000001. a"  # the offset at its bound (the text's leading indent is trimmed)
    assert text.splitlines()[1] == " " * 16 + "1000002. "  # 8 indents: Slack's most
    assert text.splitlines()[-1] == "ok"
    assert blocks_to_mrkdwn("not a list") == ""
    assert not shows_blocks({"text": "", "blocks": {"type": "section"}})
