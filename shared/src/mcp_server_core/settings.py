"""Settings every server shares, read from the environment (prefix per server) and overridden by the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

__all__ = ["LogLevel", "ServerSettings", "Transport"]

Transport = Literal["stdio", "http"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


def _split_commas(value: object) -> object:
    return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value


class ServerSettings(BaseSettings):
    """The family's common settings. A server subclasses this with its own `env_prefix` and fields."""

    model_config = SettingsConfigDict(env_prefix="MCP_SERVER_", extra="ignore", validate_default=True)

    transport: Transport = "stdio"
    host: str = Field("127.0.0.1", description="HTTP bind address; anything but loopback requires a bearer token")
    port: int = Field(8000, ge=0, le=65535)
    path: str = Field("/mcp", pattern=r"^/[A-Za-z0-9/_\-.]*$")
    stateless: bool = Field(False, description="HTTP without sessions, for several workers behind a load balancer")
    resumable: bool = Field(
        False,
        description="HTTP SSE streams a client can resume with Last-Event-ID after a drop (events kept in memory)",
    )
    sse_retry_ms: int = Field(
        1000, ge=0, le=600_000, description="with resumable: how long a client waits before reconnecting (SSE retry)"
    )
    read_only: bool = False
    toolsets: str | None = Field(None, description="comma-separated toolset names, or 'all' / 'default'")
    log_level: LogLevel = "WARNING"
    auth_token: SecretStr | None = Field(None, description="bearer token HTTP clients must send")
    auth_token_file: Path | None = Field(None, description="file holding bearer tokens, one per line")
    # NoDecode + the validator below: "a,b" in the environment, not JSON.
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra browser Origins allowed over HTTP (loopback ones always are)"
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra Host header values allowed over HTTP, e.g. a gateway's name"
    )

    @field_validator("allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _split_commas(value)

    @model_validator(mode="after")
    def _resumable_needs_sessions(self) -> Self:
        if self.resumable and self.stateless:
            raise ValueError("resumable streams belong to a session; a stateless server has none: pick one")
        return self

    def bearer_tokens(self) -> list[str]:
        """Every token that may authenticate an HTTP client."""
        tokens = [self.auth_token.get_secret_value()] if self.auth_token else []
        if self.auth_token_file is not None:
            lines = self.auth_token_file.read_text().splitlines()
            tokens += [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        return tokens
