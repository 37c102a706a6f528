"""Diffs as raw text, paged by byte offset at line boundaries, optionally narrowed to one file."""

from __future__ import annotations

import json
from typing import Annotated

from mcp_server_core import Limit, Rendered, Untrusted, decode_cursor, encode_cursor
from mcp_server_core.conventions.budget import json_size
from pydantic import Field

from mcp_server_github.client import GitHubApi
from mcp_server_github.shapes import cursor_tail, fenced

DIFF_PAGE_BYTES = 12_000
DIFF_MEDIA = "application/vnd.github.diff"
DiffBytes = Annotated[Limit, Field(le=DIFF_PAGE_BYTES, description="Max bytes of diff")]


class Diff(Rendered):
    diff: str
    next_cursor: str | None = None

    def render(self) -> str:
        return self.diff + cursor_tail(self.next_cursor)


def file_section(diff: str, path: str) -> str:
    """The part of a unified diff about `path` (its `diff --git` block), or empty."""
    sections = diff.split("\ndiff --git ")
    for index, section in enumerate(sections):
        block = section if index == 0 else "diff --git " + section
        header = block.split("\n", 1)[0]
        if header.startswith("diff --git ") and (header.endswith(f" b/{path}") or f" a/{path} " in header):
            return block if block.endswith("\n") else block + "\n"
    return ""


def diff_page(
    api: GitHubApi, path: str, what: str, file: str | None, limit: int, cursor: str | None
) -> tuple[str, str | None]:
    """One page of the diff at `path`, fenced, and a cursor for the next page.

    Every page asks for the whole diff again; GitHub answers a repeat with 304 against our ETag, which costs no
    rate limit, so paging a large diff is cheap.
    """
    scope = json.dumps([path, file, limit])
    start = int(decode_cursor(cursor, scope=scope)["offset"]) if cursor else 0
    text = api.request("GET", path, accept=DIFF_MEDIA, what=what).data or ""
    if not isinstance(text, str):
        text = json.dumps(text)
    if file:
        text = file_section(text, file)
        if not text:
            return f"No change to {Untrusted(file)} in {what}.", None
    encoded = text.encode()
    chunk = encoded[start : start + limit]
    # `limit` bytes as the wire counts them (a diff of code is full of quotes and tabs, two bytes each in JSON):
    # the page and its copy in the structured content then fit the tool's budget without the helpers' cut.
    while True:
        end = start + len(chunk)
        if end < len(encoded):
            boundary = chunk.rfind(b"\n")
            if boundary > 0:
                chunk = chunk[: boundary + 1]
                end = start + len(chunk)
        body = chunk.decode(errors="replace")
        size = json_size(body)
        if size <= limit or len(chunk) <= 1:
            break
        chunk = chunk[: len(chunk) * limit // size]
    next_cursor = encode_cursor({"offset": end}, scope=scope) if end < len(encoded) else None
    label = f"{what}, bytes {start:,}-{end:,} of {len(encoded):,}"
    return fenced(body, label, limit=limit + 100, markup=False, author="the authors of these changes"), next_cursor
