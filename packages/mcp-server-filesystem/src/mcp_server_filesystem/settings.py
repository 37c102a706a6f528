"""The filesystem server's settings: the allowed directories and how far client roots may reach."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Self

from mcp_server_core.conventions.settings import ServerSettings
from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict


class FilesystemSettings(ServerSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_FS_", extra="ignore", validate_default=True)

    # NoDecode: MCP_FS_ROOTS="/a:/b" (os.pathsep, like PATH), not JSON.
    roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, description="the allowed directories; resolved to real paths at start"
    )
    allow_roots_outside: bool = Field(
        False, description="let the client's MCP roots stand even where they lie outside the given directories"
    )
    watch: bool = Field(True, description="watch the roots for changes (resource notifications)")
    listed_resources: int = Field(500, ge=0, le=100_000, description="files shown by resources/list")

    @field_validator("roots", mode="before")
    @classmethod
    def _split_paths(cls, value: object) -> object:
        if isinstance(value, str):
            return [part for part in value.split(os.pathsep) if part.strip()]
        return value

    @field_validator("roots", mode="after")
    @classmethod
    def _real_directories(cls, value: list[Path]) -> list[Path]:
        real: list[Path] = []
        for path in value:
            if "\x00" in str(path):
                raise ValueError("a directory name contains a NUL byte")
            resolved = Path(os.path.realpath(os.path.expanduser(path)))
            if not resolved.is_dir():
                raise ValueError(f"{str(path)!r} is not a directory")
            if resolved not in real:
                real.append(resolved)
        return real

    @model_validator(mode="after")
    def _some_root(self) -> Self:
        if not self.roots and not self.allow_roots_outside:
            raise ValueError(
                "give at least one DIR to serve (or --allow-roots-outside to take the directories from the client's "
                "MCP roots)"
            )
        return self
