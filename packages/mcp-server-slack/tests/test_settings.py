"""Tokens come from the environment or a file, are checked for their kind, and are redacted from the start."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_server_core import redact
from mcp_server_slack.settings import SlackSettings
from pydantic import ValidationError


def test_tokens_and_url_come_from_slack_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-111-222-fromenvironment")
    monkeypatch.setenv("SLACK_USER_TOKEN", "xoxp-111-222-fromenvironment")
    monkeypatch.setenv("SLACK_API_URL", "http://proxy.internal/api")
    monkeypatch.setenv("MCP_SLACK_WRITE_CHANNELS", "C0123ABCD, #general")
    settings = SlackSettings()
    assert settings.bot_token is not None
    assert settings.bot_token.get_secret_value() == "xoxb-111-222-fromenvironment"
    assert settings.api_url == "http://proxy.internal/api/"
    assert settings.write_channels == ["C0123ABCD", "#general"]
    assert "fromenvironment" not in repr(settings)
    assert redact("token xoxp-111-222-fromenvironment leaked") == "token *** leaked"


def test_a_token_file_holds_either_kind(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("xoxp-333-444-userfromfile\nxoxb-333-444-botfromfile\n")
    settings = SlackSettings(token_file=path)
    assert settings.bot_token is not None
    assert settings.user_token is not None
    assert settings.bot_token.get_secret_value() == "xoxb-333-444-botfromfile"
    assert settings.user_token.get_secret_value() == "xoxp-333-444-userfromfile"
    assert redact("xoxb-333-444-botfromfile") == "***"


def test_a_token_of_the_wrong_kind_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValidationError) as raised:
        SlackSettings(bot_token="xoxp-555-666-wrongkind")
    assert "SLACK_USER_TOKEN" in str(raised.value)
    assert "wrongkind" not in str(raised.value.errors(include_input=False))


def test_write_channels_repeat_and_split() -> None:
    settings = SlackSettings(write_channels=["C0123ABCD,#general", "#random"], allow_write=True)
    assert settings.write_channels == ["C0123ABCD", "#general", "#random"]
    assert settings.writes_enabled
    assert not SlackSettings(write_channels=["#random"], allow_write=True, read_only=True).writes_enabled


def test_the_api_url_must_be_http() -> None:
    with pytest.raises(ValidationError):
        SlackSettings(api_url="file:///etc/passwd")


def test_allow_mentions_split_and_take_only_users_or_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SLACK_ALLOW_MENTIONS", "U0ALICE00, S01SRE")
    assert SlackSettings().allow_mentions == ["U0ALICE00", "S01SRE"]
    assert SlackSettings(allow_mentions=["users"]).allow_mentions == ["users"]
    for wrong in ("here", "@alice", "<!subteam^S01>"):
        with pytest.raises(ValidationError, match="allow-mentions"):
            SlackSettings(allow_mentions=[wrong])
