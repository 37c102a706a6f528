"""The domain: notes as UTF-8 text files in one folder, and the tools that read and write them.

Replace this module with your server's domain. What to keep: tools raise the helpers' failure types with a
message that says what to do next, results are `Rendered` models, writes are atomic, listings page.

Content is hostile: a note may have been written by anyone (a synced folder, a cloned repository). What a note
holds reaches the model only inside a `fence()` (a body) or as an `Untrusted` value formatted into the server's
own words (a name, a matching line: its one-line form), and every answer pages to fit its budget.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Sequence
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
    Untrusted,
    audit_target,
    decode_cursor,
    did_you_mean,
    encode_cursor,
    fence,
    note_at_end,
    take_within_budget,
)
from mcp_server_core.conventions.budget import json_size
from mcp_server_core.conventions.tools import DEFAULT_BUDGET, unadvertised
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
PAGE_BYTES = 7_000
"""Bytes of a note one read_note shows: cleaned and fenced, at most twice this in JSON (a newline or a quote is
escaped), so a page and its label fit the text budget whatever the note holds."""

ChangeListener = Callable[[str, str], None]
"""Called with ("created" | "updated" | "deleted", note name) after each change on disk."""


class NoteStore:
    """Notes on disk. Every write is atomic: a temporary file in the same folder, fsync, rename."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.listener: ChangeListener | None = None

    def names(self) -> list[str]:
        # fullmatch: `$` in re.match also matches before a trailing newline ("groceries\n" would be a note).
        return sorted(p.name for p in self.folder.iterdir() if p.is_file() and re.fullmatch(NOTE_NAME, p.name))

    def path(self, name: str) -> Path:
        if not re.fullmatch(NOTE_NAME, name):
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
    name: Untrusted
    bytes: int
    modified: str = Field(description="ISO 8601, UTC")


def _fits(items: Sequence[BaseModel]) -> int:
    """How many of `items` fit in one answer: each is shown once as a line of text and once in the structure."""
    return take_within_budget(items, lambda item: 2 * json_size(item.model_dump(mode="json")), DEFAULT_BUDGET)


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


class Hit(BaseModel):
    note: Untrusted
    line: int
    text: Untrusted


class SearchHits(Rendered):
    query: str
    hits: list[Hit]
    next_cursor: str | None = None

    def render(self) -> str:
        lines = [f"{hit.note}:{hit.line}: {hit.text}" for hit in self.hits] or [f"No line matches {self.query!r}."]
        if self.next_cursor:
            lines.append(f"next_cursor={self.next_cursor}")
        return "\n".join(lines)


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
            infos.append(NoteInfo(name=Untrusted(name), bytes=stat.st_size, modified=modified))
        infos = infos[: _fits(infos)]
        more = start + len(infos) < len(names)
        next_cursor = encode_cursor({"offset": start + len(infos)}, scope="list_notes") if more else None
        return NoteList(notes=infos, total=len(names), next_cursor=next_cursor)

    @toolset.tool(title="Read note", read_only=True, open_world=False)
    def read_note(
        name: NoteName, offset: Annotated[int, Field(ge=0, json_schema_extra=unadvertised("minimum"))] = 0
    ) -> str:
        """Read one note's text."""
        data = store.read(name).encode()
        if offset > len(data):
            raise InvalidArgument(f"offset={offset} is past the note's end ({len(data):,} bytes).")
        end = min(offset + PAGE_BYTES, len(data))
        if end < len(data):  # end the page at a line break, or at least between two characters
            end = data.rfind(b"\n", offset, end) + 1 or end
            while data[end] & 0xC0 == 0x80:
                end -= 1
        if end < len(data):
            note_at_end(f"[bytes {offset:,}-{end:,} of {len(data):,}; continue with offset={end}]")
        page = data[offset:end].decode(errors="replace")
        return fence(page, what=f"note {Untrusted(name)}")

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
            Hit(note=Untrusted(name), line=number, text=Untrusted(line.strip()))
            for name in store.names()
            for number, line in enumerate(store.read(name).splitlines(), start=1)
            if needle in line.casefold()
        ]
        start = decode_cursor(cursor, scope=f"search:{query}")["offset"] if cursor else 0
        page = hits[start : start + limit]
        page = page[: _fits(page)]
        more = start + len(page) < len(hits)
        next_cursor = encode_cursor({"offset": start + len(page)}, scope=f"search:{query}") if more else None
        return SearchHits(query=query, hits=page, next_cursor=next_cursor)

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
