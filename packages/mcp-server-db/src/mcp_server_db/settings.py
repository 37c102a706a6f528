from __future__ import annotations

from mcp_server_core.settings import ServerSettings
from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import SettingsConfigDict


class DbSettings(ServerSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_DB_", extra="ignore", validate_default=True)

    url: str | None = Field(
        None,
        validation_alias=AliasChoices("url", "MCP_DB_URL", "DATABASE_URL"),
        description="SQLAlchemy URL; none serves the bundled sample database",
    )
    statement_timeout_s: float = Field(10.0, gt=0, le=600, description="server-side timeout of each statement")
    allow_write: bool = Field(False, description="add execute_statement, which commits (needs a URL)")
    schema_poll_s: float = Field(10.0, ge=0, description="how often to check for schema changes; 0 turns it off")

    @field_validator("url", mode="before")
    @classmethod
    def _empty_means_the_sample(cls, value: object) -> object:
        # A host form left empty (the MCP Bundle's database_url) arrives as "", not as no setting at all.
        return None if isinstance(value, str) and not value.strip() else value
