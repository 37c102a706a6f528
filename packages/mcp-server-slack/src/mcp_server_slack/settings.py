"""Settings: Slack tokens from the environment (or a file), the write policy from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

from mcp_server_core import register_secret
from mcp_server_core.conventions.settings import UpstreamIdentitySettings
from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from mcp_server_slack.posting import MENTION_ENTRY

BOT_PREFIXES = ("xoxb-", "xoxe.xoxb-")
USER_PREFIXES = ("xoxp-", "xoxe.xoxp-")


class SlackSettings(UpstreamIdentitySettings):
    model_config = SettingsConfigDict(env_prefix="MCP_SLACK_", extra="ignore", validate_default=True)

    # Tokens are read from the environment or a file, never argv, where `ps` shows them to every local user.
    bot_token: SecretStr | None = Field(
        None, validation_alias=AliasChoices("bot_token", "SLACK_BOT_TOKEN"), description="xoxb bot token"
    )
    user_token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("user_token", "SLACK_USER_TOKEN"),
        description="xoxp user token; search.messages accepts only this kind",
    )
    token_file: Path | None = Field(
        None,
        validation_alias=AliasChoices("token_file", "SLACK_TOKEN_FILE"),
        description="file holding an xoxb and/or xoxp token, one per line (a mounted secret)",
    )
    api_url: str = Field(
        "https://slack.com/api/",
        validation_alias=AliasChoices("api_url", "SLACK_API_URL"),
        pattern=r"^https?://",
        description="Slack Web API base URL: a proxy, a test double",
    )
    timeout_s: float = Field(15.0, gt=0, le=120, description="seconds to wait for one Slack API answer")
    max_retry_wait_s: float = Field(
        10.0, ge=0, le=120, description="longest Retry-After a call waits out once; longer ones fail at once"
    )
    cache_ttl_s: float = Field(600.0, gt=0, description="how long names of users and channels are trusted")
    max_cached: int = Field(20_000, ge=100, description="most users and channels each kept in memory")
    allow_write: bool = Field(False, description="register post_message, reply_to_thread and add_reaction")
    write_channels: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="channels writes may go to: IDs or #names, comma-separated"
    )
    allow_broadcast: bool = Field(False, description="let posts mention @channel, @here and @everyone")
    allow_mentions: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="who a post's mention argument may name: users (anyone), user IDs, user group IDs",
    )

    @field_validator("allow_mentions", mode="after")
    @classmethod
    def _check_mentions(cls, value: list[str]) -> list[str]:
        for entry in value:
            if not MENTION_ENTRY.match(entry):
                raise ValueError(f"allow-mentions: {entry!r} is not users, a user ID (U…) or a user group ID (S…)")
        return value

    @field_validator("write_channels", "allow_mentions", mode="before")
    @classmethod
    def _split_channels(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, list):  # --write-channels given more than once, each maybe comma-separated
            return [part.strip() for item in value for part in str(item).split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _tokens(self) -> Self:
        if self.token_file is not None:
            try:
                lines = self.token_file.read_text().split()
            except OSError as exc:
                raise ValueError(f"cannot read the token file: {exc.strerror}") from None
            for line in lines:
                if line.startswith(BOT_PREFIXES) and self.bot_token is None:
                    self.bot_token = SecretStr(line)
                elif line.startswith(USER_PREFIXES) and self.user_token is None:
                    self.user_token = SecretStr(line)
        # Registered before anything can log: every message and log line is redacted of both from now on.
        for token in (self.bot_token, self.user_token):
            if token is not None:
                register_secret(token.get_secret_value())
        if self.bot_token is not None and not self.bot_token.get_secret_value().startswith(BOT_PREFIXES):
            raise ValueError("SLACK_BOT_TOKEN must be a bot token (xoxb-...); a user token goes in SLACK_USER_TOKEN")
        if self.user_token is not None and not self.user_token.get_secret_value().startswith(USER_PREFIXES):
            raise ValueError("SLACK_USER_TOKEN must be a user token (xoxp-...); a bot token goes in SLACK_BOT_TOKEN")
        if not self.api_url.endswith("/"):
            self.api_url += "/"
        return self

    @property
    def writes_enabled(self) -> bool:
        return self.allow_write and bool(self.write_channels) and not self.read_only
