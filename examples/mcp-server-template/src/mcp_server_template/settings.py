import os
from pathlib import Path
from typing import Self

from mcp_server_core.conventions.settings import ServerSettings
from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict


def _default_notes_dir() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "mcp-server-template" / "notes"


class TemplateSettings(ServerSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_TEMPLATE_", extra="ignore", validate_default=True)

    notes_dir: Path = Field(default_factory=_default_notes_dir, description="folder the notes live in")
    conformance: bool = Field(False, description="also serve the fixtures of the official conformance suite")

    @model_validator(mode="after")
    def _conformance_resumes_streams(self) -> Self:
        # The suite's SSE polling fixture (test_reconnection) needs resumable streams; say resumable=false to opt out.
        if self.conformance and not self.stateless and "resumable" not in self.model_fields_set:
            self.resumable = True
        return self
