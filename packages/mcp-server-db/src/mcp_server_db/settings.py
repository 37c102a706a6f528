from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp_server_core.conventions.settings import ServerSettings
from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict


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
    allow_privileged_role: bool = Field(
        False,
        description="connect even as a role that reaches outside the database (superuser, file or signal powers)",
    )
    allow_functions: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        validation_alias=AliasChoices("allow_functions", "MCP_DB_ALLOW_FUNCTIONS"),
        description="functions read-only queries may call beyond the guard's lists, comma-separated",
    )

    role_map: Path | None = Field(
        None,
        description="file (TOML or JSON) mapping each caller (principal, or --role-claim's value) to a PostgreSQL "
        "role; each call then runs SET ROLE to it, and unmapped callers are refused unless the file gives a default",
    )
    role_claim: str | None = Field(
        None, description="the JWT claim whose value the role map is keyed on (default: the file's, else the principal)"
    )

    @field_validator("allow_functions", mode="before")
    @classmethod
    def _split_functions(cls, value: object) -> object:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    @field_validator("url", mode="before")
    @classmethod
    def _empty_means_the_sample(cls, value: object) -> object:
        # A host form left empty (the MCP Bundle's database_url) arrives as "", not as no setting at all.
        return None if isinstance(value, str) and not value.strip() else value
