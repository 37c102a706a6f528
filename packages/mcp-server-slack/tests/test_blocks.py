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
