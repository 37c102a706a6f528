"""Settings: the token, the API URL (GitHub Enterprise Server, or a fake in tests) and the allow-list."""

from __future__ import annotations

from typing import Annotated, Self

from mcp_server_core.conventions.errors import register_secret
from mcp_server_core.conventions.settings import UpstreamIdentitySettings
from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from mcp_server_github.allowlist import AllowList

DEFAULT_API_URL = "https://api.github.com"


class GitHubSettings(UpstreamIdentitySettings):
    model_config = SettingsConfigDict(env_prefix="MCP_GITHUB_", extra="ignore", validate_default=True)

    # The names GitHub's own tools read; never a command-line flag, where `ps` would show it.
    token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("token", "MCP_GITHUB_TOKEN", "GITHUB_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN"),
        description="GitHub token; without one only public data is readable, at 60 requests an hour",
    )
    api_url: str = Field(
        DEFAULT_API_URL,
        validation_alias=AliasChoices("api_url", "MCP_GITHUB_API_URL", "GITHUB_API_URL"),
        pattern=r"^https?://[^\s/]+(/[^\s]*)?$",
        description="REST API root; https://HOST/api/v3 for GitHub Enterprise Server",
    )
    web_url: str | None = Field(
        None,
        pattern=r"^https?://[^\s/]+(/[^\s]*)?$",
        description="with --upstream-identity oauth: where GitHub's sign-in pages are (default: from the API URL, "
        "https://github.com or the Enterprise host)",
    )
    repos: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="repository allow-list: owner/name or owner/*, comma-separated; empty allows every repository",
    )
    timeout_s: int = Field(15, ge=1, le=300, description="seconds before one HTTP request to GitHub gives up")
    rate_limit_wait_s: float = Field(
        5.0, ge=0, le=60, description="longest wait for the one retry after a rate limit; longer limits fail at once"
    )
    request_interval_s: float = Field(0.0, ge=0, le=10, description="least seconds between two requests")
    # GitHub asks integrators to wait a second between writes to stay clear of the secondary rate limit.
    write_interval_s: float = Field(1.0, ge=0, le=10, description="least seconds between two writes")

    lockdown: bool = Field(
        False,
        description="in public repositories, withhold titles and bodies by authors without push access (lockdown.py)",
    )

    @field_validator("repos", mode="before")
    @classmethod
    def _split_repos(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("repos")
    @classmethod
    def _valid_patterns(cls, value: list[str]) -> list[str]:
        AllowList(value)  # raises ValueError naming the bad entry
        return value

    @model_validator(mode="after")
    def _register_token(self) -> Self:
        # At once, before anything can log or raise with it in the text.
        if self.token is not None:
            register_secret(self.token.get_secret_value())
        return self

    @property
    def allow_list(self) -> AllowList:
        return AllowList(self.repos)

    @property
    def sign_in_url(self) -> str:
        """GitHub's web root, where /login/oauth/authorize and /login/oauth/access_token are: github.com beside
        api.github.com, the host itself for GitHub Enterprise Server (https://HOST/api/v3)."""
        if self.web_url:
            return self.web_url.rstrip("/")
        api = self.api_url.rstrip("/")
        if api == DEFAULT_API_URL:
            return "https://github.com"
        return api.removesuffix("/api/v3")
