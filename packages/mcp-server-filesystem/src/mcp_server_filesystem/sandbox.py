"""Containment: every path a tool touches goes through a `Sandbox`, and every change happens dir-fd-relative.

Two layers, because a check alone is a race:

1. `Sandbox.locate` turns what the model wrote into a real location under one root. It refuses NUL bytes,
   `~`, Windows drive and UNC paths, then resolves symlinks the way the kernel will (`..` after a symlink
   climbs from the link's target) and checks the result by path components, so `/a/allowed_evil`, a
   trailing quote or space, `..` in any form, dangling links and link chains that leave the roots are
   refused before anything is opened. The message names the allowed roots and never the outside target.
2. Every operation then walks from the root's directory fd to the location one component at a time with
   `O_NOFOLLOW | O_DIRECTORY`, and acts on the leaf with `dir_fd` (`openat`, `renameat`, `unlinkat`,
   `mkdirat`). A directory swapped for a symlink after the check makes the walk fail with ELOOP/ENOTDIR
   instead of following it, so no operation lands outside the roots even under a race.

Special files: the leaf is `lstat`-ed through its parent's fd before it is opened, so FIFOs, sockets and
devices are refused without being opened (opening a FIFO blocks; opening a tape device rewinds it), and
regular files are opened with `O_NONBLOCK` and checked again with `fstat`.

Hard links: the name inside a root is what is allowed. A file with several links is read like any other;
writes never go through the shared inode (they replace the name with temp + rename), so other links,
possibly outside the roots, keep their content.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from mcp_server_core import Conflict, InvalidArgument, NotFound, Refused, ToolFailure, os_failure
from mcp_server_core.conventions.untrusted import from_one_line, one_line

from mcp_server_filesystem.renames import exchange, rename_noreplace

__all__ = ["TEMP_SUFFIX", "Location", "Sandbox", "Shown", "climb", "describe_mode", "printable", "read_fd"]

TEMP_SUFFIX = ".mcp-tmp"
"""Suffix of the temporary files of atomic writes; the watcher ignores them."""

MAX_PATH_CHARS = 4096
"""PATH_MAX on Linux: a longer path cannot name anything."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once at import, before any thread exists: umask can only be read by setting it
_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:(?:[\\/]|$)|\\\\|//\?/)")


SHOWN_PATH_CHARS = 4 * 4 * MAX_PATH_CHARS
"""A shown path is never cut below this: a path of PATH_MAX bytes escapes to at most four characters a byte
(`\\x1b`), so every path the sandbox accepts is shown whole and can be named back."""


class Shown(str):
    """A name or path as results show it: its one-line form (`untrusted.one_line`): newlines, control, bidi
    and invisible characters escaped, bytes that are not UTF-8 as `\\xNN`, backslashes doubled, so a file named
    `a.txt\\nsecret.txt` cannot print a line of its own and two names never display alike.

    Its repr quotes it without escaping it again, so a message that writes `{location.shown!r}` shows the same
    spelling a listing does, the one `Sandbox.locate` takes back.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"'{self}'"


def printable(text: str) -> Shown:
    """A name or path in its one-line form (see `Shown`)."""
    return Shown(one_line(text, SHOWN_PATH_CHARS))


def _unescape(raw: str) -> str:
    """The name a shown form stands for (`from_one_line`): what a model copies from an answer names that file."""
    return from_one_line(raw)


def describe_mode(mode: int) -> str:
    """A short word for the kind of file a mode describes."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


@dataclass(frozen=True)
class Location:
    """A place under one root: the root's real path and the components below it (none when it is the root)."""

    root: str
    parts: tuple[str, ...]
    shown: Shown
    """How results name it: relative to the first root when under it, else absolute; its one-line form."""

    @property
    def path(self) -> str:
        return os.path.join(self.root, *self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else os.path.basename(self.root)

    def child(self, name: str) -> Location:
        shown = printable(name) if self.shown in ("", ".") else Shown(f"{self.shown.rstrip('/')}/{printable(name)}")
        return Location(self.root, (*self.parts, name), shown)


class Sandbox:
    """The allowed roots (real, absolute paths) and the only way tools reach the filesystem."""

    def __init__(
        self, roots: Sequence[str], *, client_roots: Sequence[str] | None = None, note: str | None = None
    ) -> None:
        self.roots: tuple[str, ...] = tuple(dict.fromkeys(roots))
        self.client_roots = tuple(client_roots) if client_roots is not None else None
        """The client's MCP roots this sandbox was narrowed to, if any."""
        self.note = note
        """Why nothing is allowed, when the reason is not the roots themselves (unusable client roots)."""

    def __repr__(self) -> str:
        return f"Sandbox({list(self.roots)!r})"

    # --- messages ---------------------------------------------------------------------------------------------

    @property
    def roots_note(self) -> str:
        if not self.roots and self.note:
            return self.note
        if not self.roots and self.client_roots:
            return (
                "No directory is allowed in this session: the client's roots ("
                + ", ".join(printable(root) for root in self.client_roots)
                + ") lie outside the server's directories; start the server with them, or with --allow-roots-outside."
            )
        if not self.roots:
            return "No directory is allowed: start the server with a DIR, or connect a client that sends roots."
        return "Allowed roots: " + ", ".join(printable(root) for root in self.roots) + "."

    def refused(self, message: str, hint: str | None = None) -> Refused:
        return Refused(f"{message} {self.roots_note}", hint=hint)

    def not_found(self, location: Location, what: str = "Path") -> NotFound:
        return NotFound(f"{what} {location.shown!r} does not exist.", hint=self._hint(location))

    # --- where a path leads -----------------------------------------------------------------------------------

    def locate(self, raw: str, *, follow_leaf: bool = True) -> Location:
        """The real location `raw` names, or `Refused` if it is (or leads) outside every root.

        With `follow_leaf=False` the last component is not resolved: delete, move and stat act on a symlink
        itself, which is inside the roots even when its target is not.
        """
        if not self.roots:
            raise Refused(self.roots_note)
        if len(raw) > MAX_PATH_CHARS:
            raise self.refused(f"The path is {len(raw):,} characters long; the limit is {MAX_PATH_CHARS:,}.")
        if "\x00" in raw:
            raise self.refused("The path contains a NUL byte.")
        if raw.startswith("~"):
            raise self.refused(f"{raw!r}: '~' is not expanded.", hint="Give an absolute path under a root.")
        if _WINDOWS_PATH.match(raw):
            raise self.refused(f"{raw!r} is a Windows path; this server runs on POSIX.")
        candidate = raw if os.path.isabs(raw) else os.path.join(self.roots[0], raw or ".")
        if "\\" in raw:
            # A path copied from an answer is a one-line form (`a\nb`, `caf\xe9`, `back\\slash`): it names what it
            # shows. A plain path as a user types it (`a\b`) still names the file it spells when only that exists.
            named = _unescape(raw)
            if "\x00" in named:
                raise self.refused("The path contains a NUL byte (written \\x00).")
            shown = named if os.path.isabs(named) else os.path.join(self.roots[0], named or ".")
            if shown != candidate and (os.path.lexists(shown) or not os.path.lexists(candidate)):
                candidate = shown
        head, leaf = os.path.split(candidate.rstrip("/") or "/")
        # A trailing slash follows the last link, as in POSIX ("link/" names the directory it points to).
        try:
            if follow_leaf or raw.endswith("/") or leaf in ("", ".", "..") or not candidate.rstrip("/"):
                real = _realpath(candidate, self)
            else:
                real = os.path.join(_realpath(head, self), leaf)
        except _SymlinkLoop:
            # A loop outside the roots answers as any outside path does: whether it exists stays unsaid.
            if self._root_of(os.path.normpath(candidate)) is None:
                raise self.refused(f"{raw!r} is outside the allowed roots.") from None
            # Inside by its spelling; the loop itself may lie outside, so which of the two it is stays unsaid.
            raise self.refused(
                f"{raw!r} runs into a symlink loop, or leads outside the allowed roots through a symlink."
            ) from None
        root = self._root_of(real)
        if root is None:
            lexical = os.path.normpath(candidate)
            if self._root_of(lexical) is not None:
                raise self.refused(f"{raw!r} leads outside the allowed roots through a symlink.")
            raise self.refused(f"{raw!r} is outside the allowed roots.")
        parts = () if real == root else tuple(os.path.relpath(real, root).split(os.sep))
        location = Location(root, parts, self.show(real))
        if raw.endswith("/") and os.path.lexists(real) and not os.path.isdir(real):
            # POSIX: "name/" names a directory; a file under it is ENOTDIR, not the file.
            raise InvalidArgument(
                f"{raw!r} ends with '/', which names a directory, but {location.shown!r} is not one (ENOTDIR).",
                hint="Drop the trailing slash to name the file.",
            )
        return location

    def _root_of(self, real: str) -> str | None:
        for root in self.roots:
            if root == "/" or real == root or real.startswith(root + os.sep):
                return root
        return None

    def show(self, real: str) -> Shown:
        first = self.roots[0]
        if real == first:
            return Shown(".")
        prefix = first.rstrip("/") + "/"
        return printable(real[len(prefix) :] if real.startswith(prefix) else real)

    def location_of(self, root: str, parts: Sequence[str]) -> Location:
        parts = tuple(parts)
        return Location(root, parts, self.show(os.path.join(root, *parts)))

    # --- directory fds -------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def open_dir(self, location: Location, *, create: bool = False) -> Iterator[int]:
        """An fd of the directory at `location`, walked from its root without following any symlink."""
        fd = self._walk(location.root, location.parts, create=create, location=location)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def open_parent(self, location: Location, *, create: bool = False) -> Iterator[int]:
        """An fd of the directory holding `location`'s leaf."""
        if not location.parts:
            raise self.refused(f"{location.shown!r} is an allowed root itself; this operation needs a path below it.")
        fd = self._walk(location.root, location.parts[:-1], create=create, location=location)
        try:
            yield fd
        finally:
            os.close(fd)

    def _walk(self, root: str, parts: Sequence[str], *, create: bool, location: Location) -> int:
        try:
            fd = os.open(root, _DIR_FLAGS)
        except OSError as exc:
            raise self.refused(f"The root {root!r} cannot be opened ({exc.strerror}).") from None
        for index, part in enumerate(parts):
            try:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                os.close(fd)
                where = self.location_of(root, parts[: index + 1])
                if exc.errno == errno.ENOENT:
                    raise NotFound(f"Directory {where.shown!r} does not exist.", hint=self._hint(where)) from None
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    kind = self._kind_at(root, parts[: index + 1])
                    if kind == "symlink":
                        raise self.refused(
                            f"{where.shown!r} became a symlink while {location.shown!r} was in use; nothing was done."
                        ) from None
                    raise InvalidArgument(f"{where.shown!r} is a {kind}, not a directory.") from None
                raise os_failure(exc, f"{'Creating' if create else 'Opening'} directory {where.shown!r}") from None
            os.close(fd)
            fd = child
        return fd

    def _kind_at(self, root: str, parts: Sequence[str]) -> str:
        try:
            return describe_mode(os.lstat(os.path.join(root, *parts)).st_mode)
        except OSError:
            return "missing entry"

    def _hint(self, location: Location) -> str:
        near = self._near_names(location)
        return f"{near} {self.roots_note}" if near else self.roots_note

    def _near_names(self, location: Location) -> str | None:
        """A did-you-mean hint: names in the same directory equal under Unicode normalisation or case."""
        if not location.parts:
            return None
        parent = self.location_of(location.root, location.parts[:-1])
        try:
            # Listed through the fd walk: a parent swapped for a symlink must not leak an outside directory's names.
            with self.open_dir(parent) as fd:
                names = os.listdir(fd)
        except (OSError, ToolFailure):
            return None
        wanted = unicodedata.normalize("NFC", location.parts[-1]).casefold()
        close = [n for n in names if unicodedata.normalize("NFC", n).casefold() == wanted]
        if close:
            return "A name that differs only in Unicode normalisation or case exists: " + ", ".join(
                repr(printable(n)) for n in close[:3]
            )
        import difflib

        near = difflib.get_close_matches(location.parts[-1], names, n=3, cutoff=0.7)
        return ("Did you mean " + " or ".join(repr(printable(n)) for n in near) + "?") if near else None

    # --- leaf operations ------------------------------------------------------------------------------------

    def lstat(self, location: Location) -> os.stat_result:
        """The entry's own metadata (a symlink's, not its target's)."""
        if not location.parts:
            with self.open_dir(location) as fd:
                return os.fstat(fd)
        with self.open_parent(location) as parent:
            try:
                return os.stat(location.parts[-1], dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                raise self.not_found(location) from None

    @contextlib.contextmanager
    def open_file(self, location: Location) -> Iterator[tuple[int, os.stat_result]]:
        """A read fd of the regular file at `location`; directories, FIFOs, sockets and devices are refused."""
        with self.open_parent(location) as parent:
            leaf = location.parts[-1]
            try:
                before = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                raise self.not_found(location, "File") from None
            self._require_regular(location, before.st_mode)
            try:
                fd = os.open(leaf, _READ_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise self.refused(f"{location.shown!r} became a symlink while in use; nothing was read.") from None
                raise self.refused(f"{location.shown!r} cannot be opened ({exc.strerror}).") from None
        try:
            info = os.fstat(fd)
            self._require_regular(location, info.st_mode)
            yield fd, info
        finally:
            os.close(fd)

    def _require_regular(self, location: Location, mode: int) -> None:
        if stat.S_ISREG(mode):
            return
        kind = describe_mode(mode)
        if stat.S_ISDIR(mode):
            raise InvalidArgument(
                f"{location.shown!r} is a directory.", hint="Use list_directory or show_tree to see inside it."
            )
        if stat.S_ISLNK(mode):
            raise self.refused(f"{location.shown!r} is a symlink that changed while in use; nothing was done.")
        raise self.refused(f"{location.shown!r} is a {kind}; only regular files are read or written.")

    def read_bytes(self, location: Location, max_bytes: int | None = None) -> bytes:
        with self.open_file(location) as (fd, info):
            return read_fd(fd, info.st_size if max_bytes is None else min(info.st_size, max_bytes))

    def iter_chunks(self, location: Location) -> Iterator[bytes]:
        """The file's bytes in 1 MiB pieces (for copies: memory stays flat)."""
        with self.open_file(location) as (fd, _info):
            while chunk := os.read(fd, 1 << 20):
                yield chunk

    def write_atomic(
        self,
        location: Location,
        data: bytes | Iterable[bytes],
        *,
        create_only: bool = False,
        make_parents: bool = False,
        mode: int | None = None,
        replacing: bytes | None = None,
    ) -> bool:
        """Replace (or create) the file atomically: temp file, fsync, rename, all relative to the parent's fd.

        Keeps the permission bits of the file it replaces; a new file gets 0666 less the umask. With
        `create_only`, an existing name makes it fail with `Conflict` (linkat refuses to overwrite). With
        `replacing`, the file is replaced only if it still holds exactly those bytes (what an edit was made
        from), checked and replaced in one step; otherwise `Conflict` and the file is left as it is.
        Returns True if the file was created.
        """
        with self.open_parent(location, create=make_parents) as parent:
            leaf = location.parts[-1]
            existing: os.stat_result | None
            try:
                existing = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                existing = None
            if existing is None and replacing is not None:
                raise self._replaced_meanwhile(location, "was deleted")
            if existing is not None:
                if create_only:
                    raise Conflict(
                        f"{location.shown!r} already exists.",
                        hint="Drop create_only to replace it, or pick a new name.",
                    )
                self._require_regular(location, existing.st_mode)
            temp = f".{leaf[:40]}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
            fd = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=parent
            )
            ours = os.fstat(fd)
            try:
                try:
                    for piece in (data,) if isinstance(data, bytes) else data:
                        view = memoryview(piece)
                        while view:
                            written = os.write(fd, view)
                            view = view[written:]
                    if existing is not None:
                        os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                        with contextlib.suppress(PermissionError):
                            os.fchown(fd, existing.st_uid, existing.st_gid)
                    elif mode is not None:
                        os.fchmod(fd, stat.S_IMODE(mode) & ~_UMASK)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                if replacing is not None:
                    self._replace_if_unchanged(parent, temp, leaf, location, replacing, ours)
                elif existing is None:
                    self._link_new(parent, temp, leaf, location)
                else:
                    os.rename(temp, leaf, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                # Only our own file: after an exchange the temporary name may hold another program's version.
                with contextlib.suppress(OSError):
                    if _identity_at(parent, temp) == (ours.st_dev, ours.st_ino):
                        os.unlink(temp, dir_fd=parent)
                raise
            with contextlib.suppress(OSError):
                os.fsync(parent)
            return existing is None

    def _replace_if_unchanged(
        self, parent: int, temp: str, leaf: str, location: Location, expected: bytes, ours: os.stat_result
    ) -> None:
        """Swap the new file in, then check that what came out is the version the change was made from.

        Another program's rename can land between the read and the replace; after the exchange what it put
        there sits under the temporary name, so it is swapped back, never deleted, and the call conflicts.
        """
        if not exchange(parent, temp, leaf):
            # No RENAME_EXCHANGE here: check again just before the rename (a narrower window, not none).
            if not _holds(parent, leaf, expected):
                raise self._replaced_meanwhile(location, "changed")
            os.rename(temp, leaf, src_dir_fd=parent, dst_dir_fd=parent)
            return
        if _holds(parent, temp, expected):
            os.unlink(temp, dir_fd=parent)  # the version the change was made from: replaced, as asked
            return
        exchange(parent, temp, leaf)  # theirs back in place; ours, now under the temporary name, is removed
        raise self._replaced_meanwhile(location, "changed")

    def _replaced_meanwhile(self, location: Location, what: str) -> Conflict:
        return Conflict(
            f"{location.shown!r} {what} while the edit was being made (another program replaced it); "
            "it was left as that program made it and nothing was written.",
            hint="Read it again and redo the edit against what it holds now.",
        )

    def _link_new(self, parent: int, temp: str, leaf: str, location: Location) -> None:
        # linkat never overwrites: a name that appeared since the check is a Conflict, not a clobber.
        try:
            os.link(temp, leaf, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
        except FileExistsError:
            raise Conflict(f"{location.shown!r} was created by someone else meanwhile; nothing was replaced.") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            os.rename(temp, leaf, src_dir_fd=parent, dst_dir_fd=parent)  # a filesystem without hard links
            return
        os.unlink(temp, dir_fd=parent)

    def make_directory(self, location: Location) -> bool:
        """mkdir -p; True if the leaf was created."""
        if not location.parts:
            return False
        with self.open_parent(location, create=True) as parent:
            try:
                os.mkdir(location.parts[-1], 0o777, dir_fd=parent)
                return True
            except FileExistsError:
                info = os.stat(location.parts[-1], dir_fd=parent, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode):
                    raise InvalidArgument(
                        f"{location.shown!r} exists and is a {describe_mode(info.st_mode)}."
                    ) from None
                return False

    def remove(self, location: Location, *, recursive: bool) -> str:
        """Delete a file, a symlink (never its target) or a directory; returns the kind removed."""
        if not location.parts:
            raise self.refused(f"{location.shown!r} is an allowed root; it cannot be deleted.")
        with self.open_parent(location) as parent:
            leaf = location.parts[-1]
            try:
                info = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                raise self.not_found(location) from None
            if not stat.S_ISDIR(info.st_mode):
                os.unlink(leaf, dir_fd=parent)
                return describe_mode(info.st_mode)
            if not recursive:
                try:
                    os.rmdir(leaf, dir_fd=parent)
                except OSError as exc:
                    if exc.errno == errno.ENOTEMPTY:
                        raise InvalidArgument(
                            f"Directory {location.shown!r} is not empty.", hint="Pass recursive=true to delete it all."
                        ) from None
                    raise
                return "directory"
            self.remove_tree(parent, leaf, location)
            return "directory"

    def remove_tree(self, parent: int, leaf: str, location: Location) -> None:
        """rm -r of `leaf` in `parent`, iterative and holding one directory fd whatever the depth.

        It never follows a symlink (each directory is opened `O_NOFOLLOW` and left with `..` checked to be the
        one it came from). What cannot be removed is passed over, the rest still goes, and the failure names
        what remains and why.
        """
        failures: list[tuple[str, OSError]] = []
        current = os.open(leaf, _DIR_FLAGS, dir_fd=parent)
        levels = [_Doomed(leaf, "", _identity(current), _clear(current, "", failures))]
        while levels:
            level = levels[-1]
            if level.subdirs:
                name = level.subdirs.pop()
                rel = f"{level.rel}/{name}" if level.rel else name
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=current)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failures.append((rel, exc))
                    continue
                os.close(current)
                current = child
                levels.append(_Doomed(name, rel, _identity(current), _clear(current, rel, failures)))
                continue
            levels.pop()
            if not levels:
                os.close(current)
                current = -1
                try:
                    os.rmdir(leaf, dir_fd=parent)
                except OSError as exc:
                    if exc.errno != errno.ENOTEMPTY:  # not empty: what the failures left, already named
                        failures.append(("", exc))
                break
            current = climb(current, levels[-1].identity)
            if current < 0:
                raise Conflict(
                    f"A directory under {location.shown!r} was moved while it was being deleted; the delete stopped.",
                    hint="List it to see what remains, then delete again.",
                )
            try:
                os.rmdir(level.name, dir_fd=current)
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    failures.append((level.rel, exc))
        if failures:
            raise self._partly_deleted(location, failures)

    def _partly_deleted(self, location: Location, failures: list[tuple[str, OSError]]) -> ToolFailure:
        first_rel, first = failures[0]
        cause = os_failure(first, f"Deleting {location.shown}/{printable(first_rel)}")
        named = ", ".join(f"{location.shown}/{printable(rel)}".rstrip("/") for rel, _ in failures[:5])
        more = f" and {len(failures) - 5} more" if len(failures) > 5 else ""
        return type(cause)(
            f"{location.shown!r} was deleted only in part: {len(failures)} entries could not be removed, so they "
            f"and the directories holding them remain: {named}{more}. {cause}"
        )

    def contains(self, outer: Location, inner: Location) -> bool:
        """Whether `inner` is `outer` or lies below it, judged by the real places (device and inode of each
        directory from `inner`'s nearest existing one up to /), not by how roots and paths are spelled: with
        nested roots, or a bind mount, one place has several names."""
        try:
            with self.open_dir(outer) as fd:
                wanted = _identity(fd)
        except ToolFailure:
            return False  # not a directory: nothing lies inside it
        current = -1
        for depth in range(len(inner.parts), -1, -1):
            try:
                current = self._walk(inner.root, inner.parts[:depth], create=False, location=inner)
                break
            except ToolFailure:
                continue
        if current < 0:
            return False
        try:
            while True:
                here = _identity(current)
                if here == wanted:
                    return True
                parent = os.open("..", _DIR_FLAGS, dir_fd=current)
                os.close(current)
                current = parent
                if _identity(current) == here:
                    return False  # / is its own parent
        finally:
            os.close(current)

    def make_staging(self, location: Location) -> Location:
        """A new hidden directory beside `location` (parents made) to build a tree in before it is published."""
        with self.open_parent(location, create=True) as parent:
            name = f".{location.parts[-1][:40]}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
            os.mkdir(name, 0o700, dir_fd=parent)
        return self.location_of(location.root, (*location.parts[:-1], name))

    def publish(self, staging: Location, target: Location, *, overwrite: bool) -> None:
        """Put the tree built at `staging` in `target`'s place in one step; an existing tree there is replaced
        only with `overwrite` (swapped out, then deleted)."""
        with self.open_parent(target) as parent:
            temp, leaf = staging.parts[-1], target.parts[-1]
            try:
                if rename_noreplace(parent, temp, parent, leaf):
                    return
            except FileExistsError:
                if not overwrite:
                    raise Conflict(
                        f"{target.shown!r} was created by someone else meanwhile; nothing was copied.",
                        hint="Pass overwrite=true to replace it, or pick a new name.",
                    ) from None
                if exchange(parent, temp, leaf):
                    self.remove_tree(parent, temp, staging)  # the replaced tree, now under the staging name
                    return
            # No renameat2 here: a plain rename, which replaces an empty directory only.
            os.rename(temp, leaf, src_dir_fd=parent, dst_dir_fd=parent)

    def discard(self, staging: Location) -> None:
        """Remove a staging tree after a failure; what cannot be removed stays hidden and is logged by the caller."""
        with contextlib.suppress(OSError, ToolFailure), self.open_parent(staging) as parent:
            self.remove_tree(parent, staging.parts[-1], staging)

    def rename(self, source: Location, target: Location, *, overwrite: bool) -> None:
        with self.open_parent(source) as src_parent, self.open_parent(target) as dst_parent:
            leaf, new = source.parts[-1], target.parts[-1]
            try:
                os.stat(leaf, dir_fd=src_parent, follow_symlinks=False)
            except FileNotFoundError:
                raise self.not_found(source) from None
            try:
                existing = os.stat(new, dir_fd=dst_parent, follow_symlinks=False)
            except FileNotFoundError:
                existing = None
            if existing is not None and not overwrite:
                raise Conflict(f"{target.shown!r} already exists.", hint="Pass overwrite=true to replace it.")
            if overwrite:
                os.rename(leaf, new, src_dir_fd=src_parent, dst_dir_fd=dst_parent)
                return
            try:
                # One step: a name created after the check above is refused by the kernel, not replaced.
                done = rename_noreplace(src_parent, leaf, dst_parent, new)
            except FileExistsError:
                raise Conflict(
                    f"{target.shown!r} was created by someone else meanwhile; nothing was moved.",
                    hint="Pass overwrite=true to replace it, or pick a new name.",
                ) from None
            if not done:
                os.rename(leaf, new, src_dir_fd=src_parent, dst_dir_fd=dst_parent)


@dataclass
class _Doomed:
    """A directory being emptied: its name in its parent, its path below the deleted one, and what is left."""

    name: str
    rel: str
    identity: tuple[int, int]
    subdirs: list[str]


def _identity_at(parent: int, name: str) -> tuple[int, int]:
    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    return info.st_dev, info.st_ino


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _clear(fd: int, rel: str, failures: list[tuple[str, OSError]]) -> list[str]:
    """Unlink everything in the directory but its subdirectories, which are returned."""
    try:
        with os.scandir(fd) as scan:
            listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in scan]
    except OSError as exc:
        failures.append((rel, exc))
        return []
    subdirs = []
    for name, is_dir in listed:
        if is_dir:
            subdirs.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            failures.append((f"{rel}/{name}" if rel else name, exc))
    return subdirs


def climb(fd: int, identity: tuple[int, int]) -> int:
    """The parent of `fd` if it is still the directory a walk came from (device, inode), else -1; closes `fd`."""
    try:
        parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
    except OSError:
        return -1
    finally:
        os.close(fd)
    if _identity(parent) != identity:
        os.close(parent)
        return -1
    return parent


def read_fd(fd: int, wanted: int) -> bytes:
    """Up to `wanted` bytes from the fd's position, in 1 MiB reads."""
    chunks = []
    remaining = wanted
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _holds(parent: int, name: str, expected: bytes) -> bool:
    """Whether `name` is a regular file with exactly these bytes (read in pieces, stopping at a difference)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=parent)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(expected):
            return False
        offset = 0
        while chunk := os.read(fd, 1 << 20):
            if expected[offset : offset + len(chunk)] != chunk:
                return False
            offset += len(chunk)
        return offset == len(expected)
    finally:
        os.close(fd)


class _SymlinkLoop(Exception):
    """The path runs into a loop of symlinks; `locate` decides what may be said about it."""


def _realpath(path: str, sandbox: Sandbox) -> str:
    try:
        return os.path.realpath(path, strict=True)
    except FileNotFoundError:
        return os.path.realpath(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _SymlinkLoop from None
        if exc.errno == errno.ENOTDIR:
            return os.path.realpath(path)
        raise sandbox.refused(f"The path cannot be resolved ({exc.strerror}).") from None
