"""Content search: one compiled regex over each file's whole buffer, lines found only around matches.

No per-line Python loop: a file is read in one call, a file without a match costs one `search` in C, and
line numbers are counted with `bytes.count` between matches. Binary files (a NUL near the start) are skipped
and counted; files over `WHOLE_FILE_BYTES` are streamed in pieces cut at line ends, so memory stays flat.
Patterns that are ASCII (or case-sensitive) run on bytes; a case-insensitive pattern with non-ASCII letters
runs on the decoded text, so `É` finds `é`.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp_server_core import InvalidArgument, cancel_on_abandon, report_progress

from mcp_server_filesystem.gitignore import compile_glob
from mcp_server_filesystem.reading import SNIFF_BYTES
from mcp_server_filesystem.sandbox import _READ_FLAGS, Location, Sandbox, printable
from mcp_server_filesystem.walk import WalkOptions, WalkReport, walk

__all__ = ["Hit", "SearchOutcome", "search_files"]

WHOLE_FILE_BYTES = 8 * 1024 * 1024
"""Files up to this size are scanned as one buffer; bigger ones are streamed."""
STREAM_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 300


@dataclass
class Hit:
    path: str
    line: int
    text: str
    context: bool = False


@dataclass
class SearchOutcome:
    hits: list[Hit] = field(default_factory=list)
    matches: int = 0
    files_searched: int = 0
    skipped: int = 0
    resume: tuple[str, int] | None = None
    """(file relative to the start, matches of it already returned) when the limit stopped the search."""


@dataclass(frozen=True)
class _Query:
    """What one search looks for: the same for every file and piece it scans."""

    pattern: re.Pattern[Any]
    on_bytes: bool
    """Whether `pattern` runs on the bytes (else on the decoded text)."""
    needle: bytes | None
    """A case-sensitive literal every match contains, so most files are rejected by memchr."""
    context: int


def compile_query(query: str, *, regex: bool, ignore_case: bool) -> tuple[re.Pattern[Any], bool]:
    """The compiled pattern and whether it runs on bytes."""
    source = query if regex else re.escape(query)
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    on_bytes = query.isascii() or not ignore_case
    try:
        if on_bytes:
            return re.compile(source.encode(), flags), True
        return re.compile(source, flags), False
    except re.error as exc:
        raise InvalidArgument(
            f"The regex {query!r} does not compile: {exc}.", hint="Fix it, or pass regex=false to search literally."
        ) from None


def _clip(text: str) -> str:
    text = text.rstrip("\r")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def _as_text(piece: Any) -> str:
    return piece.decode("utf-8", "replace") if isinstance(piece, bytes) else str(piece)


def _file_hits(
    buf: Any, pattern: re.Pattern[Any], context: int, shown: str, skip: int, room: int, first_line: int = 1
) -> tuple[list[Hit], int, bool]:
    """Hits in one buffer: (hits, match lines consumed including skipped, stopped early)."""
    nl = b"\n" if isinstance(buf, bytes) else "\n"
    hits: list[Hit] = []
    line = first_line
    counted_to = 0
    seen = 0
    taken = 0
    last_shown = 0  # the last line number already in `hits`, so context does not repeat
    position = 0
    size = len(buf)
    while position <= size:
        found = pattern.search(buf, position)
        if found is None:
            break
        start = buf.rfind(nl, 0, found.start()) + 1
        end = buf.find(nl, found.start())
        end = size if end < 0 else end
        line += buf.count(nl, counted_to, start)
        counted_to = start
        seen += 1
        position = end + 1
        if seen <= skip:
            continue
        if taken >= room:
            return hits, seen - 1, True
        if context:
            before: list[tuple[int, Any]] = []
            cursor = start
            for back in range(1, context + 1):
                if cursor == 0 or line - back <= last_shown:
                    break
                prev_start = buf.rfind(nl, 0, cursor - 1) + 1
                before.append((line - back, buf[prev_start : cursor - 1]))
                cursor = prev_start
            hits.extend(Hit(shown, n, _clip(_as_text(t)), True) for n, t in reversed(before))
        hits.append(Hit(shown, line, _clip(_as_text(buf[start:end]))))
        taken += 1
        last_shown = line
        if context:
            cursor = end + 1
            for ahead in range(1, context + 1):
                if cursor > size - 1:
                    break
                next_end = buf.find(nl, cursor)
                next_end = size if next_end < 0 else next_end
                if pattern.search(buf, cursor, next_end) is not None:
                    break  # the next line is a match: it is shown as one
                hits.append(Hit(shown, line + ahead, _clip(_as_text(buf[cursor:next_end])), True))
                last_shown = line + ahead
                cursor = next_end + 1
    return hits, seen, False


def search_files(
    box: Sandbox,
    start: Location,
    *,
    pattern: re.Pattern[Any],
    on_bytes: bool,
    context: int,
    glob: str | None,
    options: WalkOptions,
    limit: int,
    resume: tuple[str, int] | None,
    needle: bytes | None = None,
    report: WalkReport | None = None,
) -> SearchOutcome:
    """Matching lines under `start`; `needle` (a case-sensitive literal) lets most files be rejected by memchr."""
    outcome = SearchOutcome()
    query = _Query(pattern, on_bytes, needle, context)
    if start.parts and stat.S_ISREG(box.lstat(start).st_mode):
        return _search_one(box, start, query, limit, resume)
    include = compile_glob(glob) if glob else None
    after, skip = resume if resume else (None, 0)
    prefix = "" if start.shown == "." else start.shown.rstrip("/") + "/"
    entries = walk(box, start, options, after=after, inclusive=resume is not None, report=report)
    wanted = (e for e in entries if e.kind == "file" and (include is None or include.match(e.rel)))
    abandoned = threading.Event()
    with cancel_on_abandon(abandoned.set):  # a call its client cancelled, or past its deadline, stops walking
        return _search_entries(box, wanted, query, prefix, skip, limit, outcome, abandoned)


def _search_entries(
    box: Sandbox,
    wanted: Iterator[Any],
    query: _Query,
    prefix: str,
    skip: int,
    limit: int,
    outcome: SearchOutcome,
    abandoned: threading.Event,
) -> SearchOutcome:
    for entry in wanted:
        if abandoned.is_set():
            return outcome
        report_progress(outcome.files_searched, message=f"{outcome.files_searched:,} files searched")
        try:
            fd = os.open(entry.name, _READ_FLAGS, dir_fd=entry.parent_fd)
        except OSError:
            continue  # gone or swapped for a symlink since the walk saw it: never followed
        try:
            room = limit - outcome.matches
            scanned = _scan_file(fd, query, printable(prefix + entry.rel), skip, room)
        finally:
            os.close(fd)
        skip = 0
        if scanned is None:
            outcome.skipped += 1
            continue
        hits, consumed, stopped = scanned
        outcome.files_searched += 1
        outcome.hits.extend(hits)
        outcome.matches += sum(1 for h in hits if not h.context)
        if stopped or outcome.matches >= limit:
            # At the limit, whether more remains is only known by looking on: resume from this file.
            outcome.resume = (entry.rel, consumed)
            return outcome
    return outcome


def _scan_file(fd: int, query: _Query, shown: str, skip: int, room: int) -> tuple[list[Hit], int, bool] | None:
    """Hits in one open file, or None if it is not a regular text file.

    A file up to WHOLE_FILE_BYTES is read in one call and scanned as one buffer. A bigger one is streamed in
    STREAM_BYTES pieces cut at line ends, so memory stays flat; as with ripgrep's defaults, a match does not
    span lines, and context lines stop at a piece's edge.
    """
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size <= WHOLE_FILE_BYTES:
        data = os.read(fd, info.st_size) if info.st_size else b""
        if b"\x00" in data[:SNIFF_BYTES]:
            return None
        return _scan_piece(data, query, shown, skip, room, 1)
    if b"\x00" in os.pread(fd, SNIFF_BYTES, 0):
        return None
    hits: list[Hit] = []
    consumed = 0
    line = 1
    carry = b""
    offset = 0
    while True:
        chunk = os.pread(fd, STREAM_BYTES, offset)
        offset += len(chunk)
        data = carry + chunk
        if chunk:
            cut = data.rfind(b"\n")
            if cut < 0 and len(data) < 4 * STREAM_BYTES:
                carry = data
                continue
            cut = len(data) - 1 if cut < 0 else cut
            data, carry = data[: cut + 1], data[cut + 1 :]
        piece_hits, seen, stopped = _scan_piece(data, query, shown, max(skip - consumed, 0), room - len(hits), line)
        hits.extend(piece_hits)
        consumed += seen
        if stopped:
            return hits, consumed, True
        line += data.count(b"\n")
        if not chunk:
            return hits, consumed, False


def _scan_piece(
    data: bytes, query: _Query, shown: str, skip: int, room: int, first_line: int
) -> tuple[list[Hit], int, bool]:
    if query.needle is not None and query.needle not in data:  # most files: one memchr-speed scan, nothing else
        return [], 0, False
    buf: Any = data if query.on_bytes else data.decode("utf-8", "replace")
    if query.pattern.search(buf) is None:
        return [], 0, False
    return _file_hits(buf, query.pattern, query.context, shown, skip, room, first_line)


def _search_one(
    box: Sandbox, location: Location, query: _Query, limit: int, resume: tuple[str, int] | None
) -> SearchOutcome:
    """A search whose path is one file: that file, binary or not as the walk would decide."""
    outcome = SearchOutcome()
    skip = resume[1] if resume else 0
    with box.open_file(location) as (fd, _info):
        scanned = _scan_file(fd, query, location.shown, skip, limit)
    if scanned is None:
        outcome.skipped = 1
        return outcome
    hits, consumed, stopped = scanned
    outcome.files_searched = 1
    outcome.hits = hits
    outcome.matches = sum(1 for h in hits if not h.context)
    if stopped:
        outcome.resume = (location.name, consumed)
    return outcome
