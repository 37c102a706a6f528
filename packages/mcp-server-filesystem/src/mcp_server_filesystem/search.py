"""Content search: one compiled regex over each file's whole buffer, lines found only around matches.

No per-line Python loop: a file is read in one call, a file without a match costs one `search` in C, and
line numbers are counted with `bytes.count` between matches. Binary files (a NUL near the start) are skipped
and counted; files over `WHOLE_FILE_BYTES` are streamed in pieces cut at line ends, so memory stays flat.

The model's regex runs on RE2 (`compile_linear`), on the bytes, in time linear in the file whatever the pattern:
`(\\w+\\s?)*zzz` over a line of seventy word characters held Python's `re`, and the GIL, for minutes. RE2 reads
the bytes as UTF-8 and folds case by Unicode's rules, so `É` finds `é` without decoding the file.
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
from mcp_server_core.conventions.patterns import LinearPattern, compile_linear
from mcp_server_core.conventions.untrusted import label_safe

from mcp_server_filesystem.gitignore import compile_glob, matchable
from mcp_server_filesystem.reading import SNIFF_BYTES
from mcp_server_filesystem.sandbox import _READ_FLAGS, Location, Sandbox, Shown
from mcp_server_filesystem.walk import WalkOptions, WalkReport, walk

__all__ = ["Hit", "SearchOutcome", "compile_query", "content_line", "search_files"]

WHOLE_FILE_BYTES = 8 * 1024 * 1024
"""Files up to this size are scanned as one buffer; bigger ones are streamed."""
STREAM_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 300


@dataclass
class Hit:
    path: Shown
    """The file as results show it (one-line form)."""
    line: int
    text: str
    """The line as shown: control, bidi and invisible characters escaped (tabs and backslashes kept, so code
    reads as written), cut at `MAX_LINE_CHARS`; file content can print no line of its own."""
    context: bool = False
    file: str = ""
    """The file relative to where the search started, as a cursor resumes it."""
    ordinal: int = 0
    """Which match of its file this line is, or (a context line) belongs to: 1 for the first."""


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

    pattern: LinearPattern[bytes]
    needle: bytes | None
    """A case-sensitive literal every match contains, so most files are rejected by memchr."""
    context: int


def compile_query(query: str, *, regex: bool, ignore_case: bool) -> LinearPattern[bytes]:
    """The model's query compiled for the bytes of a file: an `InvalidArgument` saying what RE2 refuses."""
    source = query if regex else re.escape(query)  # Python's escapes are RE2's: a backslash before punctuation
    try:
        encoded = source.encode()
    except UnicodeEncodeError:
        raise InvalidArgument(
            "The query holds a lone surrogate (a \\udXXX escape that is no character); files are searched as UTF-8.",
            hint="Search for the text around it, or for a code point as \\x{...} with regex=true.",
        ) from None
    return compile_linear(
        encoded,
        ignore_case=ignore_case,
        multiline=True,
        hint="Write it in RE2 syntax (Python's without look-around, backreferences, atomic groups or possessive "
        "quantifiers; \\w, \\d, \\s are ASCII), or pass regex=false to search literally.",
    )


def content_line(text: str) -> str:
    """A line of a file as the server's own lines show it (a hit, a diff): control, bidi, invisible and
    line-breaking characters escaped, tabs and backslashes kept, so code reads as written and cannot print a
    line of its own."""
    if text.isascii() and text.isprintable():
        return text
    return "\t".join(label_safe(part, 10 * len(part) + 10) for part in text.split("\t"))


def _shown_line(piece: bytes) -> str:
    """A line of a file as a hit shows it: see `Hit.text`."""
    text = piece.decode("utf-8", "replace").rstrip("\r")
    return content_line(text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…")


@dataclass(frozen=True)
class _File:
    """A file being scanned: how hits name it, and how a cursor finds it again."""

    shown: Shown
    rel: str


def _file_hits(
    buf: bytes, pattern: LinearPattern[bytes], context: int, file: _File, skip: int, room: int, first_line: int = 1
) -> tuple[list[Hit], int, bool]:
    """Hits in one buffer: (hits, match lines consumed including skipped, stopped early)."""
    nl = b"\n"
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
            last_shown = line  # an earlier page showed it: no context line repeats it
            continue
        if taken >= room:
            return hits, seen - 1, True
        if context:
            before: list[tuple[int, bytes]] = []
            cursor = start
            for back in range(1, context + 1):
                if cursor == 0 or line - back <= last_shown:
                    break
                prev_start = buf.rfind(nl, 0, cursor - 1) + 1
                before.append((line - back, buf[prev_start : cursor - 1]))
                cursor = prev_start
            hits.extend(Hit(file.shown, n, _shown_line(t), True, file.rel, seen) for n, t in reversed(before))
        hits.append(Hit(file.shown, line, _shown_line(buf[start:end]), False, file.rel, seen))
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
                hits.append(Hit(file.shown, line + ahead, _shown_line(buf[cursor:next_end]), True, file.rel, seen))
                last_shown = line + ahead
                cursor = next_end + 1
    return hits, seen, False


def search_files(
    box: Sandbox,
    start: Location,
    *,
    pattern: LinearPattern[bytes],
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
    query = _Query(pattern, needle, context)
    if start.parts and stat.S_ISREG(box.lstat(start).st_mode):
        return _search_one(box, start, query, limit, resume)
    include = compile_glob(glob) if glob else None
    after, skip = resume if resume else (None, 0)
    entries = walk(box, start, options, after=after, inclusive=resume is not None, report=report)
    wanted = (e for e in entries if e.kind == "file" and (include is None or include.match(matchable(e.rel))))
    abandoned = threading.Event()
    with cancel_on_abandon(abandoned.set):  # a call its client cancelled, or past its deadline, stops walking
        return _search_entries(box, start, wanted, query, skip, limit, outcome, abandoned)


def _search_entries(
    box: Sandbox,
    start: Location,
    wanted: Iterator[Any],
    query: _Query,
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
            file = _File(box.show(os.path.join(start.path, entry.rel)), entry.rel)
            scanned = _scan_file(fd, query, file, skip, room)
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


def _scan_file(fd: int, query: _Query, file: _File, skip: int, room: int) -> tuple[list[Hit], int, bool] | None:
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
        return _scan_piece(data, query, file, skip, room, 1)
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
        piece_hits, seen, stopped = _scan_piece(data, query, file, max(skip - consumed, 0), room - len(hits), line)
        for hit in piece_hits:  # counted from the file's first match, not the piece's
            hit.ordinal += consumed
        hits.extend(piece_hits)
        consumed += seen
        if stopped:
            return hits, consumed, True
        line += data.count(b"\n")
        if not chunk:
            return hits, consumed, False


def _scan_piece(
    data: bytes, query: _Query, file: _File, skip: int, room: int, first_line: int
) -> tuple[list[Hit], int, bool]:
    if query.needle is not None and query.needle not in data:  # most files: one memchr-speed scan, nothing else
        return [], 0, False
    if query.pattern.search(data) is None:
        return [], 0, False
    return _file_hits(data, query.pattern, query.context, file, skip, room, first_line)


def _search_one(
    box: Sandbox, location: Location, query: _Query, limit: int, resume: tuple[str, int] | None
) -> SearchOutcome:
    """A search whose path is one file: that file, binary or not as the walk would decide."""
    outcome = SearchOutcome()
    skip = resume[1] if resume else 0
    with box.open_file(location) as (fd, _info):
        scanned = _scan_file(fd, query, _File(location.shown, location.name), skip, limit)
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
