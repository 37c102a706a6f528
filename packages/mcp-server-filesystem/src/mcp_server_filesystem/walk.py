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
from mcp_server_filesystem.sandbox import _DIR_FLAGS, _READ_FLAGS, Location, Sandbox, climb

__all__ = ["MAX_WALK_DEPTH", "Entry", "WalkOptions", "WalkReport", "walk"]

MAX_GITIGNORE_BYTES = 256_000

MAX_WALK_DEPTH = 256
"""Directories below this many levels are not walked (and the answer says so): a path that deep is over a
thousand characters at best, far past any project's tree, and only a hostile or broken tree gets there."""


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

    def lstat(self) -> os.stat_result:
        return os.stat(self.name, dir_fd=self.parent_fd, follow_symlinks=False)


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


@dataclass
class WalkReport:
    """What a walk left out, for the answer to say."""

    too_deep: str | None = None
    """The first directory (relative path) not entered because it lies at MAX_WALK_DEPTH."""
    moved: bool = False
    """A directory being walked was moved meanwhile: the walk stopped there."""


@dataclass
class _Level:
    """A directory being walked: its sorted entries, where the walk is in them, and how to know it again."""

    entries: list[tuple[str, str]]
    """(name, kind), sorted by name: kinds are read while the listing's fd is open (a DirEntry would stat
    through an fd number the walk has closed since)."""
    rel: str
    rel_parts: tuple[str, ...]
    depth: int
    rules: IgnoreRules
    after: tuple[str, ...] | None
    identity: tuple[int, int]
    index: int = 0


def walk(
    box: Sandbox,
    start: Location,
    options: WalkOptions,
    *,
    after: str | None = None,
    inclusive: bool = False,
    report: WalkReport | None = None,
) -> Iterator[Entry]:
    """Entries below `start` in sorted pre-order, skipping hidden and ignored ones as the options say.

    With `after`, entries up to and including that relative path are skipped (directories on the way to it
    are still descended), so a cursor resumes where the previous page stopped; `inclusive` yields the entry
    named by `after` itself (a page that stopped inside a file).

    Iterative, and holding one directory fd whatever the depth: it climbs back with `..`, checked to be the
    directory it came from (device and inode), so a directory moved mid-walk ends the walk instead of leading
    it elsewhere. Directories at MAX_WALK_DEPTH are not entered, and `report` says so.
    """
    report = report if report is not None else WalkReport()
    after_parts = tuple(after.split("/")) if after else None
    rules = _ancestor_rules(box, start) if options.gitignore else IgnoreRules()
    prefix = "/".join(start.parts)
    with box.open_dir(start) as top:
        current = os.dup(top)
    try:
        levels = [_enter(current, "", (), 1, rules, prefix, options, after_parts)]
        while levels:
            level = levels[-1]
            if level.index == len(level.entries):
                levels.pop()
                if levels:
                    current = climb(current, levels[-1].identity)
                    if current < 0:
                        report.moved = True
                        return
                continue
            name, kind = level.entries[level.index]
            level.index += 1
            step = _step(name, kind, level, prefix, options, inclusive)
            if step is None:
                continue
            entry, shown, descend, next_after = step
            entry.parent_fd = current
            if shown:
                yield entry
            if not descend or level.depth >= options.max_depth:
                continue
            if level.depth >= MAX_WALK_DEPTH:
                if report.too_deep is None and _has_entries(current, name):
                    report.too_deep = entry.rel
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=current)
            except OSError:
                continue  # swapped for a symlink or removed meanwhile: never followed
            parts = (*level.rel_parts, name)
            os.close(current)
            current = child
            levels.append(_enter(current, entry.rel, parts, level.depth + 1, level.rules, prefix, options, next_after))
    finally:
        if current >= 0:
            os.close(current)


def _enter(
    fd: int,
    rel: str,
    rel_parts: tuple[str, ...],
    depth: int,
    rules: IgnoreRules,
    prefix: str,
    options: WalkOptions,
    after: tuple[str, ...] | None,
) -> _Level:
    if options.gitignore:
        text = _gitignore_text(fd)
        if text:
            base = f"{prefix}/{rel}".strip("/") if prefix else rel
            rules = rules.with_file(base, text)
    info = os.fstat(fd)
    try:
        with os.scandir(fd) as scan:
            entries = sorted((e.name, _kind(e)) for e in scan)
    except OSError:
        entries = []
    return _Level(entries, rel, rel_parts, depth, rules, after, (info.st_dev, info.st_ino))


def _step(
    name: str, kind: str, level: _Level, prefix: str, options: WalkOptions, inclusive: bool
) -> tuple[Entry, bool, bool, tuple[str, ...] | None] | None:
    """(entry, whether to yield it, whether to enter it, the cursor inside it), or None to skip it wholly."""
    if not options.hidden and name.startswith("."):
        return None
    if options.gitignore and kind == "dir" and name == ".git":
        return None
    after = level.after
    parts = (*level.rel_parts, name)
    if after is not None and parts <= after[: len(parts)] and parts != after[: len(parts)]:
        return None  # wholly before the cursor
    child_rel = f"{level.rel}/{name}" if level.rel else name
    if level.rules:
        rooted = f"{prefix}/{child_rel}" if prefix else child_rel
        if level.rules.ignored(rooted, kind == "dir"):
            return None
    on_cursor_path = after is not None and parts == after[: len(parts)]
    shown = not on_cursor_path or (inclusive and len(parts) == len(after or ()))
    # The cursor naming this directory itself means its contents come next; on the way to it, it goes on.
    next_after = None if not on_cursor_path or len(parts) == len(after or ()) else after
    return Entry(child_rel, name, kind, level.depth, -1), shown, kind == "dir", next_after


def _has_entries(parent_fd: int, name: str) -> bool:
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return False
    try:
        with os.scandir(fd) as scan:
            return next(iter(scan), None) is not None
    except OSError:
        return False
    finally:
        os.close(fd)
