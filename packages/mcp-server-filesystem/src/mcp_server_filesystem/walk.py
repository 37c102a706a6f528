"""The one directory walker behind tree, name search and content search.

It walks with directory fds (each child opened `O_NOFOLLOW | O_DIRECTORY` relative to its parent), so a
directory swapped for a symlink mid-walk is skipped rather than followed, and it never descends a symlink:
a link is reported as a link, so tree and search cannot leave the roots or loop. Entries come in sorted
pre-order (by path components), which makes a cursor a plain "after this path".
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from mcp_server_filesystem.gitignore import IgnoreRules
from mcp_server_filesystem.sandbox import _DIR_FLAGS, _READ_FLAGS, Location, Sandbox

__all__ = ["Entry", "WalkOptions", "walk"]

MAX_GITIGNORE_BYTES = 256_000


@dataclass(frozen=True)
class WalkOptions:
    max_depth: int = 1_000
    hidden: bool = False
    gitignore: bool = True


@dataclass
class Entry:
    rel: str
    """`/`-separated path relative to where the walk started."""
    name: str
    kind: str
    """'file', 'dir', 'symlink' or 'other' (FIFOs, sockets, devices), never following a link."""
    depth: int
    parent_fd: int
    """The fd of the directory holding the entry; valid only until the walk moves on."""
    dir_entry: os.DirEntry[str]

    def lstat(self) -> os.stat_result:
        return self.dir_entry.stat(follow_symlinks=False)


def _kind(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return "symlink"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        pass
    return "other"


def _gitignore_text(dir_fd: int) -> str | None:
    try:
        fd = os.open(".gitignore", _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _ancestor_rules(box: Sandbox, start: Location) -> IgnoreRules:
    """The rules of every .gitignore between the root and the start (exclusive), outermost first."""
    rules = IgnoreRules()
    for depth in range(len(start.parts)):
        with contextlib.suppress(Exception), box.open_dir(box.location_of(start.root, start.parts[:depth])) as fd:
            text = _gitignore_text(fd)
            if text:
                rules = rules.with_file("/".join(start.parts[:depth]), text)
    return rules


def walk(
    box: Sandbox, start: Location, options: WalkOptions, *, after: str | None = None, inclusive: bool = False
) -> Iterator[Entry]:
    """Entries below `start` in sorted pre-order, skipping hidden and ignored ones as the options say.

    With `after`, entries up to and including that relative path are skipped (directories on the way to it
    are still descended), so a cursor resumes where the previous page stopped; `inclusive` yields the entry
    named by `after` itself (a page that stopped inside a file).
    """
    after_parts = tuple(after.split("/")) if after else None
    rules = _ancestor_rules(box, start) if options.gitignore else IgnoreRules()
    prefix = "/".join(start.parts)
    with box.open_dir(start) as top:
        yield from _walk_dir(top, "", (), 1, rules, prefix, options, after_parts, inclusive)


def _walk_dir(
    fd: int,
    rel: str,
    rel_parts: tuple[str, ...],
    depth: int,
    rules: IgnoreRules,
    prefix: str,
    options: WalkOptions,
    after: tuple[str, ...] | None,
    inclusive: bool = False,
) -> Iterator[Entry]:
    if options.gitignore:
        text = _gitignore_text(fd)
        if text:
            base = f"{prefix}/{rel}".strip("/") if prefix else rel
            rules = rules.with_file(base, text)
    try:
        with os.scandir(fd) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
    for dir_entry in entries:
        name = dir_entry.name
        if not options.hidden and name.startswith("."):
            continue
        kind = _kind(dir_entry)
        if options.gitignore and kind == "dir" and name == ".git":
            continue
        parts = (*rel_parts, name)
        if after is not None and parts <= after[: len(parts)] and parts != after[: len(parts)]:
            continue  # wholly before the cursor
        child_rel = f"{rel}/{name}" if rel else name
        if rules:
            rooted = f"{prefix}/{child_rel}" if prefix else child_rel
            if rules.ignored(rooted, kind == "dir"):
                continue
        on_cursor_path = after is not None and parts == after[: len(parts)]
        if not on_cursor_path or (inclusive and len(parts) == len(after or ())):
            yield Entry(child_rel, name, kind, depth, fd, dir_entry)
        if kind == "dir" and depth < options.max_depth:
            if on_cursor_path and len(parts) == len(after or ()):
                # The cursor names this directory itself: its contents come next.
                next_after = None
            else:
                next_after = after if on_cursor_path else None
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # swapped for a symlink or removed meanwhile: never followed
            try:
                yield from _walk_dir(child, child_rel, parts, depth + 1, rules, prefix, options, next_after, inclusive)
            finally:
                os.close(child)
