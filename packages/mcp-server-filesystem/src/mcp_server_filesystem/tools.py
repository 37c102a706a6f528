"""The tools. Each resolves its paths through the session's `Sandbox` and does its I/O in a worker thread."""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp_server_core import (
    DEFAULT_BUDGET,
    Conflict,
    Cursor,
    InvalidArgument,
    Limit,
    Media,
    NotFound,
    Refused,
    Rendered,
    ToolFailure,
    Toolset,
    audit_target,
    call_context,
    decode_cursor,
    encode_cursor,
    note_at_end,
    os_failure,
    take_within_budget,
)
from mcp_server_core.conventions.budget import json_size
from mcp_server_core.conventions.places import Place
from mcp_server_core.conventions.tools import MAX_MESSAGE_BYTES, unadvertised
from mcp_server_core.conventions.untrusted import clean, fence
from pydantic import BaseModel, Field, PrivateAttr

from mcp_server_filesystem.editing import MAX_EDIT_BYTES, Edit, apply_edits, check_hash, short_sha256
from mcp_server_filesystem.gitignore import compile_glob, matchable
from mcp_server_filesystem.reading import MAX_MEDIA_BYTES, media_type, read_media, read_text, sniff_binary
from mcp_server_filesystem.sandbox import Location, Sandbox, describe_mode, printable, read_fd
from mcp_server_filesystem.search import Hit, compile_query, content_line, search_files
from mcp_server_filesystem.walk import MAX_WALK_DEPTH, Entry, WalkOptions, WalkReport, walk

if TYPE_CHECKING:
    from mcp_server_filesystem.roots import ClientRoots

__all__ = ["Workspace", "files_toolset"]

T = TypeVar("T")

READ_BUDGET = 24_000
"""read_file's default max_bytes."""
MAX_READ_BYTES = 200_000
READ_ANSWER_BUDGET = MAX_READ_BYTES + 2_000
"""read_file's answer budget: the largest max_bytes of content, measured as the wire carries it, plus its fence
and notes. So max_bytes is the bound a call asks for and gets (the default 24,000 sets the default answer), and
the content is cut to it by read_file itself, at a line, with its own note on where to continue."""
LISTING_ROOM = DEFAULT_BUDGET - 1_000
"""Bytes a paged listing's items may take in the text, and as many in the structured content: the rest of the
tool's budget is for the tally and next_cursor, so both fit whole and agree."""
MAX_MANY = 50
MAX_HASH_BYTES = 256 * 1024 * 1024
MAX_WRITE_BYTES = MAX_MESSAGE_BYTES * 3 // 4
"""write_file's content bound (UTF-8 bytes), under the transports' message bound (stdio's line and HTTP's body),
with a quarter left for JSON's escapes and the envelope: a content the tool accepts arrives, and one over it
gets the tool's answer, not only the transport's."""
MEDIA_BUDGET = 4 * -(-MAX_MEDIA_BYTES // 3)
"""The base64 of the largest image or audio file read_file sends (reading.py refuses bigger ones with a hint)."""

PathArg = str
"""Absolute or relative to the first root; the sandbox checks it (length, NUL, `~`, containment)."""
Offset = Annotated[int, Field(description="1-based; -N: last N lines")]
MaxBytes = Annotated[int, Field(ge=1_000, le=MAX_READ_BYTES, json_schema_extra=unadvertised("minimum"))]
Everything = Annotated[bool, Field(description="Hidden, ignored too")]


class Workspace:
    """What the tools share: the sandbox, the client's roots on MCP, and a way to announce changes."""

    def __init__(self, base: Sandbox, roots: ClientRoots | None = None) -> None:
        self.base = base
        self.roots = roots
        """The MCP track's per-session roots; None on the command line, where the given directories rule."""
        self.on_change: Callable[[str, bool], None] = lambda path, listing: None
        """Called with (real path, whether the set of files changed) after a tool changed something."""

    async def sandbox(self) -> Sandbox:
        """The sandbox of the call being served: the client's roots narrow the given directories on MCP."""
        ctx = call_context()
        if self.roots is None or ctx is None:
            return self.base
        try:
            session = ctx.session
            request_id: Any = ctx.request_id
        except (RuntimeError, AttributeError):
            return self.base
        return await self.roots.sandbox(session, request_id)


async def _in_thread(fn: Callable[[], T]) -> T:
    return await anyio.to_thread.run_sync(fn)


def folders_of(
    ws: Workspace, *arguments: str, every_root: bool = False, follow_leaf: bool = True
) -> Callable[[Mapping[str, Any]], Awaitable[list[Place]]]:
    """The folders a call reads or writes, for the confirmation of cross writes (the helpers' flows.py): the
    allowed root each path argument resolves into, as the tool itself resolves it (symlinks followed, so a link in
    one root to a file in another names the other). No path: the first root, or with `every_root`, all of them
    (show_tree without a path shows every root). A path outside the roots fails here as the tool would."""

    async def declared(given: Mapping[str, Any]) -> list[Place]:
        box = await ws.sandbox()
        paths: list[str] = []
        for name in arguments:
            value = given.get(name)
            if isinstance(value, str):
                paths.append(value)
            elif isinstance(value, list):
                paths.extend(v for v in value if isinstance(v, str))
        if not paths:
            roots = box.roots if every_root else box.roots[:1]
            return [Place("folder", root, printable(root)) for root in roots]

        def roots_of() -> list[Place]:
            located = [_outermost(box, box.locate(path, follow_leaf=follow_leaf).root) for path in paths]
            return [Place("folder", root, printable(root)) for root in dict.fromkeys(located)]

        return await _in_thread(roots_of)

    return declared


def _outermost(box: Sandbox, root: str) -> str:
    """The widest allowed root holding `root`: nested roots (`/A` and `/A/b`) are one place to the confirmation of
    cross writes, as whoever allowed `/A` allowed everything under it."""
    holders = [r for r in box.roots if r == root or root.startswith(r.rstrip(os.sep) + os.sep)]
    return min(holders, key=len, default=root)


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "K", "M", "G"):
        if value < 1024 or unit == "G":
            return f"{int(value)}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{n}B"


def _link_note(box: Sandbox, location: Location) -> str:
    """Where a symlink leads, without naming anything outside the roots."""
    try:
        target = box.locate(location.path)
    except ToolFailure:
        return "(outside the roots or broken)"
    return target.shown


# --- results -------------------------------------------------------------------------------------------------


class DirItem(BaseModel):
    name: str
    type: str
    size: int | None = None
    modified: str | None = None
    target: str | None = None


class DirListing(Rendered):
    entries: list[DirItem]
    next_cursor: str | None = None
    _details: str = PrivateAttr(default="")
    _total: int = PrivateAttr(default=0)

    def render(self) -> str:
        if self._details:
            return self._details
        lines = [_listing_line(e) for e in self.entries]
        if not lines:
            lines.append("(empty)")
        tail = f"({len(self.entries)} of {self._total})"
        return "\n".join([*lines, tail + (f" next_cursor={self.next_cursor}" if self.next_cursor else "")])


def _listing_line(e: DirItem) -> str:
    if e.type == "dir":
        return f"{e.name}/"
    if e.type == "symlink":
        return f"{e.name}@ -> {e.target}"
    return f"{e.name}\t{_size(e.size or 0)}\t{e.modified or ''}"


def _item_cost(text: str, item: Any) -> int:
    """What one listed item costs the answer: its bytes in the text or in the structure, whichever is more."""
    return max(len(text.encode()) + 1, json_size(item) + 1)


class FoundPaths(Rendered):
    paths: list[str]
    next_cursor: str | None = None
    _note: str = PrivateAttr(default="")

    def render(self) -> str:
        body = "\n".join(self.paths) or "No path matches."
        return (
            body
            + (f"\nnext_cursor={self.next_cursor}" if self.next_cursor else "")
            + (f"\n{self._note}" if self._note else "")
        )


class SearchResult(Rendered):
    hits: list[str] = Field(description="path:line:text")
    matches: int
    next_cursor: str | None = None
    _grouped: str = PrivateAttr(default="")
    _files_searched: int = PrivateAttr(default=0)
    _skipped: int = PrivateAttr(default=0)
    _note: str = PrivateAttr(default="")

    def render(self) -> str:
        skipped = f", {self._skipped} binary skipped" if self._skipped else ""
        if self._grouped and not skipped and not self.next_cursor and not self._note:
            return self._grouped  # complete, as grep's would be: a tally would only count the lines above
        tail = f"({self.matches} matching lines, {self._files_searched} files searched{skipped})"
        body = self._grouped or "No match."
        note = f"\n{self._note}" if self._note else ""
        return f"{body}\n{tail}" + (f" next_cursor={self.next_cursor}" if self.next_cursor else "") + note


def _grouped(hits: list[Hit]) -> str:
    lines: list[str] = []
    current = None
    for hit in hits:
        if hit.path != current:
            lines.append(hit.path)
            current = hit.path
        lines.append(_hit_line(hit))
    return "\n".join(lines)


def _hit_line(hit: Hit) -> str:
    return f"{hit.line}{'-' if hit.context else ':'} {hit.text}"


def _hit_string(hit: Hit) -> str:
    sep = "-" if hit.context else ":"
    return f"{hit.path}{sep}{hit.line}{sep}{hit.text}"


def _page_of_hits(hits: list[Hit], room: int) -> tuple[list[Hit], Hit | None]:
    """The leading hits that fit `room` bytes of text and as many of structure, whole matches only (a match with
    its context lines; a first match whose context alone is over the room, with the context nearest to it that
    fits), and the first hit of the first match left out, if any."""
    groups: list[list[Hit]] = []
    for hit in hits:
        if groups and (groups[-1][0].file, groups[-1][0].ordinal) == (hit.file, hit.ordinal):
            groups[-1].append(hit)
        else:
            groups.append([hit])

    def cost(group: list[Hit]) -> int:
        text = len(group[0].path.encode()) + 1 + sum(len(_hit_line(hit).encode()) + 1 for hit in group)
        return max(text, sum(json_size(_hit_string(hit)) + 1 for hit in group))

    kept = take_within_budget(groups, cost, room)
    shown = [hit for group in groups[:kept] for hit in group]
    if kept == 1 and cost(groups[0]) > room:
        # One match whose context is over the room alone: the match, and the context lines nearest to it that fit.
        group = groups[0]
        match = next(hit for hit in group if not hit.context)
        nearest = sorted(group, key=lambda hit: abs(hit.line - match.line))
        chosen = nearest[: max(take_within_budget(nearest, lambda hit: cost([hit]), room), 1)]
        shown = [hit for hit in group if hit in chosen]
    return shown, groups[kept][0] if kept < len(groups) else None


# --- the blocking work, one function per tool --------------------------------------------------------------


def _read_one(box: Sandbox, path: str, offset: int, limit: int | None, max_bytes: int) -> str | Media:
    location = box.locate(path)
    if offset == 1 and limit is None:
        media = read_media(box, location)
        if media is not None:
            mime, data = media
            return Media(data, mime)
    return _text_of(box, location, offset, limit, max_bytes, closing_note=True)


def _within_wire_bytes(text: str, first: int, max_bytes: int) -> tuple[str, int]:
    """The head of `text` (whole lines from line `first`) whose JSON on the wire is at most `max_bytes`, and the
    number of its last line: quotes, backslashes and controls cost more there than in the file."""
    if json_size(text) <= max_bytes:
        return text, first + text.count("\n") - (1 if text.endswith("\n") else 0)
    kept: list[str] = []
    used = 2
    for line in text.splitlines(keepends=True):
        cost = json_size(line) - 2
        if used + cost > max_bytes:
            break
        kept.append(line)
        used += cost
    if kept:
        return "".join(kept), first + len(kept) - 1
    head = text.split("\n", 1)[0]  # one line longer than the budget: its head, as long as it fits
    while json_size(head) > max_bytes:
        head = head[: max(len(head) * max_bytes // json_size(head) - 1, 0)]
    return head, first


def _text_of(
    box: Sandbox, location: Location, offset: int, limit: int | None, max_bytes: int, *, closing_note: bool = False
) -> str:
    """The lines read, fenced as the file's content (a file is data, whoever wrote it), then where they are."""
    piece = read_text(box, location, offset=offset, limit=limit, max_bytes=max_bytes)
    if piece.total == 0:
        return "[empty file]"
    text, last = _within_wire_bytes(piece.text, piece.first, max_bytes)
    if len(text) < len(piece.text):
        piece = replace(piece, text=text, last=last, cut=True)
    notes = []
    if piece.encoding not in ("utf-8",):
        notes.append(f"[decoded as {piece.encoding.removesuffix('+bom')}]")
    whole = piece.first == 1 and piece.last == piece.total and not piece.cut
    if piece.cut and piece.first == piece.last and len(piece.text.encode()) >= max_bytes // 2:
        notes.append(
            f"[line {piece.first} of {piece.total:,} cut at {max_bytes:,} bytes: the line is longer than max_bytes; "
            "raise max_bytes or find what you need with search_text]"
        )
    elif piece.cut:
        continuation = (
            f"[lines {piece.first}-{piece.last} of {piece.total:,}, cut at the {max_bytes:,}-byte budget; "
            f"continue with offset={piece.last + 1}]"
        )
        if closing_note:
            note_at_end(continuation)  # kept through any cut of the answer: the model's way on
        else:
            notes.append(continuation)
    elif not whole:
        # Not cut: the range asked for (or the tail), so where to go on is the model's own arithmetic.
        notes.append(f"[lines {piece.first}-{piece.last} of {piece.total:,}]")
    fenced = fence(clean(piece.text.removesuffix("\n"), markup=False), what=location.shown)
    return "\n".join([fenced, *notes])


def _read_many(box: Sandbox, paths: list[str], offset: int, limit: int | None, max_bytes: int) -> str:
    """Each file in its own fence, sharing the budget; a failing file shows its error, the rest still come."""
    share = max(max_bytes // len(paths), 1_000)
    sections = []
    for path in paths:
        try:
            location = box.locate(path)
            with box.open_file(location) as (fd, _info):
                head = os.pread(fd, 64, 0)
            if media_type(head, location.name) is not None and not head.isascii():
                body = "[image or audio: read it alone to get it as media]"
                sections.append(f"==> {location.shown} <==\n{body}")
            else:  # the fence's label names the file
                sections.append(_text_of(box, location, offset, limit, share))
        except ToolFailure as exc:
            sections.append(f"==> {printable(path)} <==\n[error: {exc}]")
    return "\n\n".join(sections)


def _write(box: Sandbox, path: str, content: str, create_only: bool) -> tuple[str, Location, bool]:
    location = box.locate(path)
    data = content.encode()
    if len(data) > MAX_WRITE_BYTES:
        raise InvalidArgument(
            f"content is {len(data):,} bytes in UTF-8; write_file takes at most {MAX_WRITE_BYTES:,}.",
            hint="Split it: write a first part, then grow it with edit_file; or have a program generate the file.",
        )
    created = box.write_atomic(location, data, create_only=create_only, make_parents=True)
    verb = "created" if created else "replaced"
    return f"{verb} {location.shown} ({len(data):,} bytes, sha256 {short_sha256(data)})", location, created


def _edit(
    box: Sandbox, path: str, edits: list[Edit], dry_run: bool, expected_sha256: str | None
) -> tuple[str, Location | None]:
    location = box.locate(path)
    with box.open_file(location) as (fd, info):
        # Sized before it is read: a sparse 10 GiB file is free on disk and would take 10 GiB of memory.
        if info.st_size > MAX_EDIT_BYTES:
            raise InvalidArgument(
                f"{location.shown!r} is {info.st_size:,} bytes, over the {MAX_EDIT_BYTES:,} edit_file takes.",
                hint="Replace it whole with write_file, or find the part to change with search_text.",
            )
        data = read_fd(fd, MAX_EDIT_BYTES + 1)  # a file that grew since fstat is refused by apply_edits
    check_hash(data, expected_sha256, location.shown)
    outcome = apply_edits(data, edits, location.shown)
    notes = "".join(f"{note}\n" for note in outcome.notes)
    # Each line of the diff ends with "\n" (editing.py): split there only, as a line may hold U+2028 and the like.
    outcome = replace(outcome, diff="".join(f"{content_line(line)}\n" for line in outcome.diff.split("\n")[:-1]))
    if not outcome.changed:
        return f"{notes}No change: the edits leave {location.shown} as it is.", None
    if dry_run:
        return (
            f"Dry run: nothing written. {len(edits)} edit(s) to {location.shown} would give:\n{notes}{outcome.diff}",
            None,
        )
    box.write_atomic(location, outcome.data, replacing=data)
    head = f"Edited {location.shown} (sha256 {short_sha256(outcome.data)}):\n"
    return head + notes + outcome.diff, location


def _copy(box: Sandbox, source: str, destination: str, overwrite: bool) -> tuple[str, Location]:
    src = box.locate(source)
    dst = box.locate(destination)
    info = box.lstat(src)
    if stat.S_ISREG(info.st_mode):
        box.write_atomic(dst, box.iter_chunks(src), create_only=not overwrite, mode=info.st_mode)
        return f"copied {src.shown} to {dst.shown} ({info.st_size:,} bytes)", dst
    if not stat.S_ISDIR(info.st_mode):
        raise box.refused(f"{src.shown!r} is a {describe_mode(info.st_mode)}; only files and directories are copied.")
    if box.contains(src, dst):
        raise InvalidArgument(f"{dst.shown!r} is inside {src.shown!r}; a directory cannot be copied into itself.")
    try:
        existing: os.stat_result | None = box.lstat(dst)
    except NotFound:
        existing = None
    if existing is not None:
        if not overwrite:
            raise _exists(dst)
        if not stat.S_ISDIR(existing.st_mode):
            raise InvalidArgument(f"{dst.shown!r} exists and is a {describe_mode(existing.st_mode)}, not a directory.")
    # Built aside and published in one rename: a copy that fails half-way leaves nothing, and a reader never
    # sees half a tree under the destination's name.
    staging = box.make_staging(dst)
    try:
        files, dirs, skipped = _copy_tree(box, src, staging)
        box.publish(staging, dst, overwrite=overwrite)
    except BaseException:
        box.discard(staging)
        raise
    note = f"; {skipped} symlink(s) or special file(s) not copied" if skipped else ""
    return f"copied {src.shown} to {dst.shown} ({files} files, {dirs} directories{note})", dst


def _copy_tree(box: Sandbox, src: Location, staging: Location) -> tuple[int, int, int]:
    files = dirs = skipped = 0
    report = WalkReport()
    for entry in walk(box, src, WalkOptions(hidden=True, gitignore=False), report=report):
        parts = entry.rel.split("/")
        target = box.location_of(staging.root, (*staging.parts, *parts))
        if entry.kind == "dir":
            box.make_directory(target)
            dirs += 1
        elif entry.kind == "file":
            origin = box.location_of(src.root, (*src.parts, *parts))
            box.write_atomic(target, box.iter_chunks(origin), create_only=True, mode=entry.lstat().st_mode)
            files += 1
        else:
            skipped += 1  # symlinks and special files are not copied: a link could lead outside the roots
    if report.too_deep is not None:
        raise InvalidArgument(
            f"{src.shown!r} is deeper than {MAX_WALK_DEPTH} levels; nothing was copied.",
            hint="Copy its parts separately, or with a shell tool.",
        )
    if report.moved:
        raise Conflict(f"A directory under {src.shown!r} was moved while it was being copied; nothing was copied.")
    return files, dirs, skipped


def _exists(location: Location) -> ToolFailure:
    return Conflict(
        f"{location.shown!r} already exists.", hint="Pass overwrite=true to replace it, or pick a new name."
    )


def _move(box: Sandbox, source: str, destination: str, overwrite: bool) -> tuple[str, Location, Location]:
    src = box.locate(source, follow_leaf=False)
    dst = box.locate(destination, follow_leaf=False)
    if not src.parts:
        raise box.refused(f"{src.shown!r} is an allowed root; it cannot be moved.")
    if box.contains(src, dst):
        raise InvalidArgument(f"{dst.shown!r} is inside {src.shown!r}; nothing can move into itself.")
    try:
        box.rename(src, dst, overwrite=overwrite)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise os_failure(exc, f"Moving {src.shown!r} to {dst.shown!r}") from None
        info = box.lstat(src)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidArgument(
                f"{src.shown!r} and {dst.shown!r} are on different filesystems; only files move across them.",
                hint="move_path with copy=true copies the directory; then delete_path the original.",
            ) from None
        box.write_atomic(dst, box.iter_chunks(src), create_only=not overwrite, mode=info.st_mode)
        box.remove(src, recursive=False)
    return f"moved {src.shown} to {dst.shown}", src, dst


def _list(box: Sandbox, path: str, sort: str, hidden: bool, limit: int, cursor: str | None) -> DirListing:
    own = box.locate(path, follow_leaf=False)
    mode = box.lstat(own).st_mode
    if stat.S_ISLNK(mode):
        try:
            location = box.locate(path)
            mode = box.lstat(location).st_mode
        except ToolFailure:
            return _stat(box, path)  # a link leading outside or nowhere: its own metadata only
    else:
        location = own
    if not stat.S_ISDIR(mode):
        return _stat(box, path)
    scope = f"list:{location.path}:{sort}:{hidden}"
    start = decode_cursor(cursor, scope=scope)["offset"] if cursor else 0
    rows: list[tuple[DirItem, float]] = []
    with box.open_dir(location) as fd, os.scandir(fd) as scan:
        for entry in scan:
            if not hidden and entry.name.startswith("."):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = describe_mode(info.st_mode)
            if kind == "directory":
                rows.append((DirItem(name=printable(entry.name), type="dir"), info.st_mtime))
            elif kind == "symlink":
                # A link's own metadata only: nothing about a target that may lie outside the roots.
                note = _link_note(box, location.child(entry.name))
                rows.append((DirItem(name=printable(entry.name), type="symlink", target=note), 0.0))
            else:
                item = DirItem(name=printable(entry.name), type=kind, size=info.st_size, modified=_when(info.st_mtime))
                rows.append((item, info.st_mtime))
    if sort == "size":
        rows.sort(key=lambda r: (-(r[0].size or 0), r[0].name))
    elif sort == "modified":
        rows.sort(key=lambda r: (-r[1], r[0].name))
    else:
        rows.sort(key=lambda r: (r[0].type != "dir", r[0].name))
    page = [item for item, _ in rows[start : start + limit]]
    page = page[: take_within_budget(page, lambda e: _item_cost(_listing_line(e), e.model_dump()), LISTING_ROOM)]
    more = start + len(page) < len(rows)
    next_cursor = encode_cursor({"offset": start + len(page)}, scope=scope) if more else None
    listing = DirListing(entries=page, next_cursor=next_cursor)
    listing._total = len(rows)
    return listing


def _tree(box: Sandbox, path: str | None, depth: int, limit: int, hidden: bool, gitignore: bool) -> str:
    """One line a directory, as `ls -R` groups them: its path, then its entries, `/` after a directory (with
    `(+N)` entries at the depth limit), `@` after a symlink; no path: every root.

    A line a directory rather than a line an entry, since a name costs a model fewer tokens than the newline
    and indentation around it: a tree of fastmcp's sources to depth 2 takes a third fewer.
    """
    if path is None:
        if not box.roots:
            raise Refused(box.roots_note)
        starts = [(box.locate(root), _one_word(printable(root)) + "/", "") for root in box.roots]
    else:
        location = box.locate(path)
        shown = location.shown.rstrip("/")
        starts = [(location, "./", "")] if shown == "." else [(location, _one_word(shown) + "/", f"{shown}/")]
    # With several roots, the first is where a relative path starts; with one there is no other place.
    lines = [f"[relative paths start at {printable(box.roots[0])}]"] if path is None and len(starts) > 1 else []
    listed = 0
    for location, header, prefix in starts:
        directories: dict[str, list[str]] = {"": []}  # walk order: each directory after its parent
        stopped_before = None
        for entry in walk(box, location, WalkOptions(max_depth=depth, hidden=hidden, gitignore=gitignore)):
            if listed >= limit:
                stopped_before = entry.rel
                break
            directories.setdefault(entry.rel.rpartition("/")[0], []).append(_tree_item(entry, depth))
            if entry.kind == "dir":
                directories.setdefault(entry.rel, [])
            listed += 1
        for rel, items in directories.items():
            if rel and not items:
                continue  # empty, at the depth limit, or all hidden: its parent's line names it
            lines.append(" ".join([header if not rel else _one_word(f"{prefix}{printable(rel)}") + "/", *items]))
        if stopped_before is not None:
            lines.append(
                f"[stopped at {limit} entries, before {printable(stopped_before)}; raise limit, lower depth, "
                "or show_tree a subdirectory]"
            )
            break
    return "\n".join(lines)


def _one_word(name: str) -> str:
    """A shown name as one item of a space-separated line: quoted when it holds a space, a quote inside written
    `\\x22` (which `locate` reads back), so the line still splits one way only and a copied name still names it."""
    if " " in name or '"' in name:
        return '"' + name.replace('"', "\\x22") + '"'
    return name


def _tree_item(entry: Entry, depth: int) -> str:
    name = _one_word(printable(entry.name))
    if entry.kind == "dir":
        return f"{name}/" + (_child_count(entry.parent_fd, entry.name) if entry.depth == depth else "")
    return f"{name}@" if entry.kind == "symlink" else name


def _child_count(parent_fd: int, name: str) -> str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
    except OSError:
        return ""
    try:
        with os.scandir(fd) as scan:
            count = sum(1 for _ in scan)
    except OSError:
        return ""
    finally:
        os.close(fd)
    return f"(+{count})" if count else ""


def _find(
    box: Sandbox, pattern: str, path: str, hidden: bool, gitignore: bool, limit: int, cursor: str | None
) -> FoundPaths:
    location = box.locate(path)
    glob = compile_glob(pattern)
    scope = f"find:{location.path}:{pattern}:{hidden}:{gitignore}"
    after = decode_cursor(cursor, scope=scope)["after"] if cursor else None
    found: list[str] = []
    next_cursor = None
    last = ""
    report = WalkReport()
    used = 0
    for entry in walk(box, location, WalkOptions(hidden=hidden, gitignore=gitignore), after=after, report=report):
        if not glob.match(matchable(entry.rel)):
            continue
        shown = box.show(os.path.join(location.path, entry.rel)) + ("/" if entry.kind == "dir" else "")
        used += _item_cost(shown, shown)
        if len(found) == limit or (found and used > LISTING_ROOM):
            next_cursor = encode_cursor({"after": last}, scope=scope)
            break
        found.append(shown)
        last = entry.rel
    result = FoundPaths(paths=found, next_cursor=next_cursor)
    result._note = _walk_note(box, location, report) if next_cursor is None else ""
    return result


def _walk_note(box: Sandbox, location: Location, report: WalkReport) -> str:
    """What a walk left out, said where the answer ends."""
    if report.too_deep is not None:
        shown = str(box.show(os.path.join(location.path, report.too_deep)))
        where = shown if len(shown) <= 80 else f"{shown[:40]}…{shown[-36:]}"
        return f"[not searched: directories deeper than {MAX_WALK_DEPTH} levels, the first {where}]"
    if report.moved:
        return "[stopped early: a directory was moved while it was being searched; search again]"
    return ""


def _search(
    box: Sandbox,
    query: str,
    path: str,
    regex: bool,
    ignore_case: bool,
    context: int,
    glob: str | None,
    hidden: bool,
    gitignore: bool,
    limit: int,
    cursor: str | None,
) -> SearchResult:
    location = box.locate(path)
    pattern = compile_query(query, regex=regex, ignore_case=ignore_case)
    scope = f"search:{location.path}:{query}:{regex}:{ignore_case}:{context}:{glob}:{hidden}:{gitignore}"
    resume = None
    if cursor:
        position = decode_cursor(cursor, scope=scope)
        resume = (str(position["file"]), int(position["skip"]))
    report = WalkReport()
    outcome = search_files(
        box,
        location,
        pattern=pattern,
        context=context,
        glob=glob,
        options=WalkOptions(hidden=hidden, gitignore=gitignore),
        limit=limit,
        resume=resume,
        needle=query.encode() if not regex and not ignore_case else None,
        report=report,
    )
    resume = outcome.resume
    # Paged so that the text and the structured hits both fit the budget, whole matches with their context;
    # the room left is for the tally and a cursor as long as the deepest file's path makes it.
    longest = max((len(hit.file) for hit in outcome.hits), default=0)
    cursor_bytes = len(encode_cursor({"file": "f" * longest, "skip": 10**9}, scope=scope))
    shown_hits, first_left = _page_of_hits(outcome.hits, LISTING_ROOM - cursor_bytes)
    if first_left is not None:
        resume = (first_left.file, first_left.ordinal - 1)
    next_cursor = None
    if resume is not None:
        next_cursor = encode_cursor({"file": resume[0], "skip": resume[1]}, scope=scope)
    matches = sum(1 for hit in shown_hits if not hit.context)
    result = SearchResult(hits=[_hit_string(hit) for hit in shown_hits], matches=matches, next_cursor=next_cursor)
    result._grouped = _grouped(shown_hits)
    result._files_searched = outcome.files_searched
    result._skipped = outcome.skipped
    if outcome.resume is None:
        result._note = _walk_note(box, location, report)
    return result


def _stat(box: Sandbox, path: str) -> DirListing:
    """One entry, with the details `ls -l` and `sha256sum` would give (a symlink's own, never its target's)."""
    location = box.locate(path, follow_leaf=False)
    info = box.lstat(location)
    kind = describe_mode(info.st_mode)
    lines = [f"path: {location.shown}", f"type: {kind}"]
    if kind == "symlink":
        # Only the link itself: size, times and kind of a target outside the roots stay unknown.
        target = _link_note(box, location)
        lines.append(f"target: {target}")
        listing = DirListing(entries=[DirItem(name=printable(location.name), type="symlink", target=target)])
        listing._details = "\n".join(lines)
        return listing
    modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec="seconds")
    lines += [
        f"size: {info.st_size:,} bytes",
        f"modified: {modified}",
        f"mode: {stat.filemode(info.st_mode)} ({stat.S_IMODE(info.st_mode):o})",
    ]
    if kind == "file":
        shared = " (hard-linked: other names share this content)" if info.st_nlink > 1 else ""
        lines.append(f"links: {info.st_nlink}{shared}")
        with box.open_file(location) as (fd, opened):
            head = os.pread(fd, 8192, 0)
            mime = media_type(head[:64], location.name)
            lines.append(f"content: {mime or ('binary' if sniff_binary(head) else 'text')}")
            if opened.st_size <= MAX_HASH_BYTES:
                digest = hashlib.sha256()
                os.lseek(fd, 0, os.SEEK_SET)
                while chunk := os.read(fd, 1 << 20):
                    digest.update(chunk)
                lines.append(f"sha256: {digest.hexdigest()}")
    item = DirItem(name=printable(location.name), type=kind, size=info.st_size, modified=modified)
    listing = DirListing(entries=[item])
    listing._details = "\n".join(lines)
    return listing


# --- the toolset --------------------------------------------------------------------------------------------


def files_toolset(ws: Workspace) -> Toolset:
    toolset = Toolset("files", "Read, search and change files under the allowed roots")
    tool = toolset.tool

    async def run(fn: Callable[..., T], *args: Any, doing: str) -> T:
        """`fn(box, *args)` in a worker thread; `doing` ("Writing 'x.txt'") heads what the disk said, if it fails."""
        box = await ws.sandbox()
        try:
            try:
                return await _in_thread(functools.partial(fn, box, *args))
            except OSError as exc:
                raise os_failure(exc, doing) from None
        except ToolFailure as exc:
            # Every error names the allowed roots (the rule), so the model never guesses where it may go.
            if box.roots_note in str(exc):
                raise
            raise type(exc)(f"{exc} {box.roots_note}") from None

    source_folder = folders_of(ws, "source")

    async def copied_from(given: Mapping[str, Any]) -> list[Place]:
        """A copy reads its source: copying from one root into another is the same flow as reading there and
        writing here (a move only writes: both its ends change, and both are its targets)."""
        return await source_folder(given) if given.get("copy") is True else []

    def changed(path: str, listing: bool) -> None:
        """A write landed on `path`: its audit line names it, and resource subscribers hear of it."""
        audit_target(path)
        ws.on_change(path, listing)

    @tool(
        title="Read file",
        read_only=True,
        open_world=False,
        budget=READ_ANSWER_BUDGET,
        media_budget=MEDIA_BUDGET,
        reads=folders_of(ws, "path"),
    )
    async def read_file(
        path: str | list[str],
        offset: Offset = 1,
        lines: int | None = None,
        max_bytes: MaxBytes = READ_BUDGET,
    ) -> str | Media:
        """Read text files, whole or by line range; images and audio come as media."""
        if lines is not None and lines < 1:
            raise InvalidArgument("lines is how many lines to read: at least 1.")
        if isinstance(path, list):
            if not 1 <= len(path) <= MAX_MANY:
                raise InvalidArgument(f"path lists 1 to {MAX_MANY} files; this one has {len(path)}.")
            return await run(_read_many, path, offset, lines, max_bytes, doing="Reading the files")
        return await run(_read_one, path, offset, lines, max_bytes, doing=f"Reading {path!r}")

    @tool(
        title="Write file",
        read_only=False,
        open_world=False,
        destructive=True,
        idempotent=True,
        writes=folders_of(ws, "path"),
    )
    async def write_file(
        path: PathArg,
        content: str,
        create_only: bool = False,
    ) -> str:
        """Create or replace a whole file (atomic; makes parents)."""
        message, location, created = await run(_write, path, content, create_only, doing=f"Writing {path!r}")
        changed(location.path, created)
        return message

    @tool(title="Edit file", read_only=False, open_world=False, destructive=True, writes=folders_of(ws, "path"))
    async def edit_file(
        path: PathArg,
        edits: list[Edit],
        dry_run: bool = False,
        expected_sha256: Annotated[str | None, Field(description="Fail unless the file has it")] = None,
    ) -> str:
        """Change parts of a text file by exact old_text; returns a diff."""
        message, location = await run(_edit, path, edits, dry_run, expected_sha256, doing=f"Editing {path!r}")
        if location is not None:
            changed(location.path, False)
        return message

    @tool(title="Create directory", read_only=False, open_world=False, idempotent=True, writes=folders_of(ws, "path"))
    async def create_directory(path: PathArg) -> str:
        """Make a directory (and parents)."""

        def make(box: Sandbox) -> tuple[str, Location, bool]:
            location = box.locate(path)
            created = box.make_directory(location)
            return (f"created {location.shown}/" if created else f"{location.shown}/ already exists"), location, created

        message, location, created = await run(make, doing=f"Creating directory {path!r}")
        if created:
            changed(location.path, True)
        return message

    @tool(
        title="Move path",
        read_only=False,
        open_world=False,
        destructive=True,
        reads=copied_from,
        writes=folders_of(ws, "source", "destination", follow_leaf=False),
    )
    async def move_path(source: PathArg, destination: PathArg, overwrite: bool = False, copy: bool = False) -> str:
        """Move, rename or (copy=true) copy a file or directory."""
        if copy:
            message, dst = await run(
                _copy, source, destination, overwrite, doing=f"Copying {source!r} to {destination!r}"
            )
            changed(dst.path, True)
            return message
        message, src, dst = await run(
            _move, source, destination, overwrite, doing=f"Moving {source!r} to {destination!r}"
        )
        changed(src.path, True)
        changed(dst.path, True)
        return message

    @tool(
        title="Delete path",
        read_only=False,
        open_world=False,
        destructive=True,
        idempotent=True,
        writes=folders_of(ws, "path", follow_leaf=False),
    )
    async def delete_path(
        path: PathArg,
        recursive: bool = False,
    ) -> str:
        """Delete a file, symlink (not its target) or directory."""

        def remove(box: Sandbox) -> tuple[str, Location]:
            location = box.locate(path, follow_leaf=False)
            kind = box.remove(location, recursive=recursive)
            return f"deleted {kind} {location.shown}", location

        message, location = await run(remove, doing=f"Deleting {path!r}")
        changed(location.path, True)
        return message

    @tool(title="List directory", read_only=True, open_world=False, reads=folders_of(ws, "path"))
    async def list_directory(
        path: PathArg | None = None,
        sort: Literal["name", "size", "modified"] = "name",
        hidden: bool = False,
        limit: Annotated[Limit, Field(le=1000)] = 200,
        cursor: Cursor = None,
    ) -> DirListing:
        """List a directory (sizes, times) or stat a file (mode, links, sha256)."""
        return await run(_list, path or ".", sort, hidden, limit, cursor, doing=f"Listing {path or '.'!r}")

    @tool(
        title="Show tree",
        read_only=True,
        open_world=False,
        continue_hint="show_tree a subdirectory",
        reads=folders_of(ws, "path", every_root=True),
    )
    async def show_tree(
        path: PathArg | None = None,
        depth: Annotated[int, Field(ge=1, le=20, json_schema_extra=unadvertised("minimum"))] = 3,
        limit: Annotated[Limit, Field(le=5000)] = 500,
        everything: Everything = False,
    ) -> str:
        """See a layout: a line a directory, listing its entries; no path: every root."""
        return await run(_tree, path, depth, limit, everything, not everything, doing=f"Showing {path or '.'!r}")

    @tool(title="Find files", read_only=True, open_world=False, reads=folders_of(ws, "path"))
    async def find_files(
        pattern: Annotated[str, Field(description="*.py, src/**/test_*")],
        path: PathArg | None = None,
        everything: Everything = False,
        limit: Annotated[Limit, Field(le=2000)] = 200,
        cursor: Cursor = None,
    ) -> FoundPaths:
        """Find files or directories by name."""
        return await run(
            _find, pattern, path or ".", everything, not everything, limit, cursor, doing=f"Searching {path or '.'!r}"
        )

    @tool(title="Search text", read_only=True, open_world=False, reads=folders_of(ws, "path"))
    async def search_text(
        query: str,
        path: PathArg | None = None,
        regex: Annotated[bool, Field(description="RE2 regex")] = False,
        ignore_case: bool = False,
        context: Annotated[int, Field(ge=0, le=10, json_schema_extra=unadvertised("minimum"))] = 0,
        glob: Annotated[str | None, Field(description="e.g. *.py")] = None,
        everything: Everything = False,
        limit: Annotated[Limit, Field(le=1000)] = 100,
        cursor: Cursor = None,
    ) -> SearchResult:
        """Find lines matching text or a regex, across files."""
        return await run(
            _search,
            query,
            path or ".",
            regex,
            ignore_case,
            context,
            glob,
            everything,
            not everything,
            limit,
            cursor,
            doing=f"Searching {path or '.'!r}",
        )

    return toolset
