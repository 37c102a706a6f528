import os
from pathlib import Path

from mcp_server_core.settings import ServerSettings
from pydantic import Field
from pydantic_settings import SettingsConfigDict


def _default_notes_dir() -> Path:
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "mcp-server-template" / "notes"


class TemplateSettings(ServerSettings):
    model_config = SettingsConfigDict(env_prefix="MCP_TEMPLATE_", extra="ignore", validate_default=True)

    notes_dir: Path = Field(default_factory=_default_notes_dir, description="folder the notes live in")
    conformance: bool = Field(False, description="also serve the fixtures of the official conformance suite")
