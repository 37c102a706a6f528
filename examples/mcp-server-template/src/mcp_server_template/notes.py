"""The domain: notes as UTF-8 text files in one folder, and the tools that read and write them.

Replace this module with your server's domain. What to keep: tools raise the helpers' failure types with a
message that says what to do next, results are `Rendered` models, writes are atomic, listings page.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from mcp_server_core import (
    Conflict,
    Cursor,
    InvalidArgument,
    Limit,
    NotFound,
    Rendered,
    Toolset,
    audit_target,
    decode_cursor,
    did_you_mean,
    encode_cursor,
)
from mcp_server_core.conventions.tools import unadvertised
from pydantic import BaseModel, Field

NOTE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
"""A note name is a plain file name: no separators, no leading dot, so no path can leave the folder."""

# The pattern is enforced, not advertised: the description says it in a third of the tokens.
NoteName = Annotated[
    str,
    Field(
        pattern=NOTE_NAME,
        description="Letters, digits, _ . - (e.g. groceries)",
        json_schema_extra=unadvertised("pattern"),
    ),
]
MAX_NOTE_BYTES = 1_000_000

ChangeListener = Callable[[str, str], None]
"""Called with ("created" | "updated" | "deleted", note name) after each change on disk."""


class NoteStore:
    """Notes on disk. Every write is atomic: a temporary file in the same folder, fsync, rename."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.listener: ChangeListener | None = None

    def names(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.is_file() and re.match(NOTE_NAME, p.name))

    def path(self, name: str) -> Path:
        if not re.match(NOTE_NAME, name):
            raise InvalidArgument(f"{name!r} is not a note name.", hint="Use letters, digits, '_', '-', '.'.")
        return self.folder / name

    def read(self, name: str) -> str:
        try:
            return self.path(name).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFound(f"Note {name!r} not found.", hint=did_you_mean(name, self.names(), noun="note")) from None

    def write(self, name: str, text: str, *, overwrite: bool) -> bool:
        """Write a note; True if it was created. Fails without touching disk if it exists and not overwrite."""
        target = self.path(name)
        data = text.encode("utf-8")
        if len(data) > MAX_NOTE_BYTES:
            raise InvalidArgument(f"The note is {len(data):,} bytes; the limit is {MAX_NOTE_BYTES:,}.")
        existed = target.exists()
        if existed and not overwrite:
            raise Conflict(f"Note {name!r} already exists.", hint="Pass overwrite=true to replace it.")
        fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".note")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        self._changed("updated" if existed else "created", name)
        return not existed

    def delete(self, name: str) -> None:
        try:
            self.path(name).unlink()
        except FileNotFoundError:
            raise NotFound(f"Note {name!r} not found.", hint=did_you_mean(name, self.names(), noun="note")) from None
        self._changed("deleted", name)

    def _changed(self, what: str, name: str) -> None:
        if self.listener is not None:
            self.listener(what, name)


class NoteInfo(BaseModel):
    name: str
    bytes: int
    modified: str = Field(description="ISO 8601, UTC")


class NoteList(Rendered):
    notes: list[NoteInfo]
    total: int
    next_cursor: str | None = None

    def render(self) -> str:
        lines = [f"{n.name}\t{n.bytes}B\t{n.modified}" for n in self.notes]
        lines.append(
            f"({len(self.notes)} of {self.total})" + (f" next_cursor={self.next_cursor}" if self.next_cursor else "")
        )
        return "\n".join(lines)


class SearchHits(Rendered):
    query: str
    hits: list[str] = Field(description="'name:line: text' for each matching line")
    next_cursor: str | None = None

    def render(self) -> str:
        tail = f"\nnext_cursor={self.next_cursor}" if self.next_cursor else ""
        return ("\n".join(self.hits) or f"No line matches {self.query!r}.") + tail


class WriteOutcome(Rendered):
    name: str
    bytes: int
    created: bool

    def render(self) -> str:
        return f"{'created' if self.created else 'replaced'} {self.name} ({self.bytes} bytes)"


def notes_toolset(store: NoteStore) -> Toolset:
    toolset = Toolset("notes", "Read, search and write notes")

    @toolset.tool(title="List notes", read_only=True, open_world=False)
    def list_notes(limit: Annotated[Limit, Field(le=500)] = 50, cursor: Cursor = None) -> NoteList:
        """See which notes exist, with their sizes and times."""
        names = store.names()
        start = decode_cursor(cursor, scope="list_notes")["offset"] if cursor else 0
        page = names[start : start + limit]
        infos = []
        for name in page:
            stat = store.path(name).stat()
            modified = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds")
            infos.append(NoteInfo(name=name, bytes=stat.st_size, modified=modified))
        more = start + limit < len(names)
        next_cursor = encode_cursor({"offset": start + limit}, scope="list_notes") if more else None
        return NoteList(notes=infos, total=len(names), next_cursor=next_cursor)

    @toolset.tool(title="Read note", read_only=True, open_world=False, continue_hint="search_notes finds a line")
    def read_note(name: NoteName) -> str:
        """Read one note's full text."""
        return store.read(name)

    @toolset.tool(title="Search notes", read_only=True, open_world=False)
    def search_notes(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="Text to find, case-insensitive",
                json_schema_extra=unadvertised("minLength", "maxLength"),
            ),
        ],
        limit: Annotated[Limit, Field(le=200)] = 20,
        cursor: Cursor = None,
    ) -> SearchHits:
        """Find which notes mention something: their matching lines."""
        needle = query.casefold()
        hits = [
            f"{name}:{number}: {line.strip()}"
            for name in store.names()
            for number, line in enumerate(store.read(name).splitlines(), start=1)
            if needle in line.casefold()
        ]
        start = decode_cursor(cursor, scope=f"search:{query}")["offset"] if cursor else 0
        more = start + limit < len(hits)
        next_cursor = encode_cursor({"offset": start + limit}, scope=f"search:{query}") if more else None
        return SearchHits(query=query, hits=hits[start : start + limit], next_cursor=next_cursor)

    @toolset.tool(title="Write note", read_only=False, open_world=False, destructive=True, idempotent=True)
    def write_note(
        name: NoteName,
        text: Annotated[
            str,
            Field(
                max_length=MAX_NOTE_BYTES, description="The whole new text", json_schema_extra=unadvertised("maxLength")
            ),
        ],
        overwrite: bool = False,
    ) -> WriteOutcome:
        """Create a note, or replace one with overwrite=true."""
        created = store.write(name, text, overwrite=overwrite)
        audit_target(f"note://{name}")
        return WriteOutcome(name=name, bytes=len(text.encode()), created=created)

    @toolset.tool(title="Delete note", read_only=False, open_world=False, destructive=True, idempotent=True)
    def delete_note(name: NoteName) -> str:
        """Delete a note for good."""
        store.delete(name)
        audit_target(f"note://{name}")
        return f"deleted {name}"

    return toolset
