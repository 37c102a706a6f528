"""The template's notes tools on plain FastMCP, without the helpers: the baseline the helpers' cost is a ratio to.

Same domain code (the template's NoteStore), same tool names and arguments; fastmcp's defaults for everything
else (its own error handling, JSON text beside structured content, no notifications hub, its stdio transport).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from fastmcp import FastMCP
from mcp_server_template.notes import NOTE_NAME, NoteStore
from pydantic import Field

store = NoteStore(Path(sys.argv[1]))
mcp = FastMCP("bare")


@mcp.tool
def list_notes(limit: Annotated[int, Field(ge=1, le=500)] = 50) -> list[str]:
    """List notes."""
    return store.names()[:limit]


@mcp.tool
def read_note(name: Annotated[str, Field(pattern=NOTE_NAME)]) -> str:
    """Read one note."""
    return store.read(name)


@mcp.tool
def search_notes(query: str, limit: int = 20) -> list[str]:
    """Find lines."""
    return [f"{n}: {line}" for n in store.names() for line in store.read(n).splitlines() if query in line][:limit]


@mcp.tool
def write_note(name: Annotated[str, Field(pattern=NOTE_NAME)], text: str, overwrite: bool = False) -> bool:
    """Write a note."""
    return store.write(name, text, overwrite=overwrite)


@mcp.tool
def delete_note(name: Annotated[str, Field(pattern=NOTE_NAME)]) -> str:
    """Delete a note."""
    store.delete(name)
    return "deleted"


if __name__ == "__main__":
    mcp.run(show_banner=False, log_level="WARNING")
