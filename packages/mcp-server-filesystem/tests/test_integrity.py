"""Integrity (issue 26): no lost update, no half-done work, errors that say what the disk said.

Each test checks the effect on the real tree (or the spawned server's memory), not only the answer.
"""

from __future__ import annotations

import array
import fcntl
import hashlib
import json
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core.testing import StdioWire, python_module
from mcp_server_core.transport.stdio import MAX_LINE_BYTES
from mcp_server_filesystem.tools import MAX_WRITE_BYTES
from mcp_server_filesystem.walk import MAX_WALK_DEPTH

V1 = b"version=1\nbody line\n"
V2 = b"version=2\nbody line\n"
LOST = b"version=1\nEDITED\n"


def _peak_mib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


# --- the stale-edit guard ----------------------------------------------------------------------------------


async def test_a_guarded_edit_never_destroys_a_version_renamed_over_it_meanwhile(
    client: Client[Any], call: Any, root: Path
) -> None:
    """Another process renames v2 over the file while the edit of v1 runs: the edit either lands on v1 (and v2
    came after it) or answers a conflict; never does v1's edit replace v2."""
    target = root / "g.txt"
    incoming = root / "incoming.txt"
    expected = hashlib.sha256(V1).hexdigest()[:16]
    edits = [{"old_text": "body line", "new_text": "EDITED"}]
    rng = random.Random(26)
    outcomes = {"edited then replaced": 0, "conflict": 0, "lost": 0}
    # The jitter spans one call (the fastest of a few), so renames fall before, inside and after the window.
    spans = []
    for _ in range(5):
        target.write_bytes(V1)
        started = time.perf_counter()
        await call(client, "edit_file", path="g.txt", edits=edits, expected_sha256=expected)
        spans.append(time.perf_counter() - started)
    span = min(spans)
    for _ in range(500):
        target.write_bytes(V1)
        incoming.write_bytes(V2)
        delay = rng.uniform(0, span * 1.2)
        # A jitter, not a wait for readiness: the race is the point.
        renamer = threading.Thread(target=lambda d=delay: (time.sleep(d), os.rename(incoming, target)))
        renamer.start()
        failed, text = await call(client, "edit_file", path="g.txt", edits=edits, expected_sha256=expected)
        renamer.join()
        final = target.read_bytes()
        if final == LOST:
            outcomes["lost"] += 1
        elif failed:
            assert "changed" in text, text
            assert final == V2, final
            outcomes["conflict"] += 1
        else:
            assert final == V2, final  # the edit landed on v1, then v2 replaced it
            outcomes["edited then replaced"] += 1
    assert outcomes["lost"] == 0, outcomes
    assert not [p for p in os.listdir(root) if p.endswith(".mcp-tmp")]


def _create_by_link(existing: Path, name: Path, delay: float, created: list[bool]) -> None:
    time.sleep(delay)  # a jitter, not a wait for readiness: the race is the point
    try:
        os.link(existing, name)
    except FileExistsError:
        created.append(False)
    else:
        created.append(True)


async def test_a_move_without_overwrite_never_replaces_a_file_created_meanwhile(
    client: Client[Any], call: Any, root: Path
) -> None:
    """Another process creates the destination (without clobbering: a hard link) while the move runs: either
    the move conflicts or the creator finds the name taken; never are both done, which loses a file."""
    source, destination, theirs = root / "draft.txt", root / "final.txt", root / "theirs.txt"
    theirs.write_bytes(b"theirs\n")
    spans = []
    for _ in range(5):
        source.write_bytes(b"ours\n")
        started = time.perf_counter()
        await call(client, "move_path", source="draft.txt", destination="final.txt")
        spans.append(time.perf_counter() - started)
        destination.unlink()
    span = min(spans)
    rng = random.Random(26)
    both = 0
    for _ in range(500):
        source.write_bytes(b"ours\n")
        created: list[bool] = []
        creator = threading.Thread(target=_create_by_link, args=(theirs, destination, rng.uniform(0, span), created))
        creator.start()
        failed, text = await call(client, "move_path", source="draft.txt", destination="final.txt")
        creator.join()
        if created[0] and not failed:
            both += 1
        elif failed:
            assert "already exists" in text or "meanwhile" in text, text
            assert source.read_bytes() == b"ours\n"
            assert destination.read_bytes() == b"theirs\n"
        destination.unlink()
    assert both == 0, f"{both} of 500 moves replaced a file created meanwhile"


# --- memory before the size check -------------------------------------------------------------------------


def test_editing_a_huge_sparse_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 1 GiB sparse file costs nothing on disk; reading it to refuse it cost the server 1 GiB of memory."""
    huge = tmp_path / "huge.log"
    with huge.open("wb") as handle:
        handle.truncate(1 << 30)
    with StdioWire(python_module("mcp_server_filesystem", str(tmp_path), "--no-watch")) as wire:
        wire.initialize()
        (tmp_path / "small.txt").write_text("warm\n")
        edit = {"old_text": "warm", "new_text": "hot"}
        wire.request("tools/call", {"name": "edit_file", "arguments": {"path": "small.txt", "edits": [edit]}})
        before = _peak_mib(wire.proc.pid)
        answer = wire.request(
            "tools/call",
            {"name": "edit_file", "arguments": {"path": "huge.log", "edits": [{"old_text": "a", "new_text": "b"}]}},
            timeout=60,
        )
        grown = _peak_mib(wire.proc.pid) - before
    assert grown <= 50, f"the server's peak memory grew by {grown} MiB"
    result = answer["result"]
    assert result["isError"] is True
    assert "1,073,741,824 bytes" in result["content"][0]["text"]
    assert "write_file" in result["content"][0]["text"]
    assert huge.stat().st_size == 1 << 30


# --- deep trees ----------------------------------------------------------------------------------------------

DEPTH = 2_000


def _chain(top: Path, depth: int) -> None:
    """`top/d/d/.../d/leaf.txt`, `depth` directories deep: made fd by fd, past what a path can name."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"needle\n")
        os.close(leaf)
    finally:
        os.close(fd)


def _unchain(top: Path) -> None:
    """Remove what `_chain` made (and whatever a failed call left) without recursion."""
    if not top.exists():
        return
    stack = [(os.open(top, os.O_RDONLY | os.O_DIRECTORY), "")]
    while stack:
        fd, _name = stack[-1]
        below = None
        with os.scandir(fd) as scan:
            for entry in scan:
                if entry.is_dir(follow_symlinks=False):
                    below = entry.name
                else:
                    os.unlink(entry.name, dir_fd=fd)
        if below is not None:
            stack.append((os.open(below, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd), below))
            continue
        os.close(fd)
        stack.pop()
        if stack:
            os.rmdir(_name, dir_fd=stack[-1][0])
    top.rmdir()


@pytest.fixture
def deep_root(tmp_path: Path) -> Iterator[Path]:
    """An allowed directory holding `deep`, a 2,000-level chain: on tmpfs where there is one (ext4 took
    seconds to remove the chain, tmpfs milliseconds)."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path / "shm"
    base.mkdir(exist_ok=True)
    (base / "deep").mkdir()
    _chain(base / "deep", DEPTH)
    yield base
    _unchain(base)


@pytest.fixture
async def deep_client(deep_root: Path, make_server: Any) -> AsyncIterator[Client[Any]]:
    async with Client(make_server(deep_root)) as connected:
        yield connected


def _leftovers(root: Path) -> list[str]:
    return [name for name in os.listdir(root) if name != "deep"]


async def test_name_search_in_a_2000_deep_tree_answers_and_says_where_it_stopped(
    deep_client: Client[Any], call: Any, deep_root: Path
) -> None:
    failed, text = await call(deep_client, "find_files", pattern="leaf.txt", path="deep")
    assert not failed, text
    assert "failed unexpectedly" not in text
    assert "No path matches." in text
    assert f"deeper than {MAX_WALK_DEPTH} levels" in text


async def test_content_search_in_a_2000_deep_tree_answers_and_says_where_it_stopped(
    deep_client: Client[Any], call: Any, deep_root: Path
) -> None:
    failed, text = await call(deep_client, "search_text", query="needle", path="deep")
    assert not failed, text
    assert f"deeper than {MAX_WALK_DEPTH} levels" in text


async def test_copying_a_2000_deep_tree_is_refused_and_leaves_nothing_behind(
    deep_client: Client[Any], call: Any, deep_root: Path
) -> None:
    failed, text = await call(deep_client, "move_path", source="deep", destination="copy", copy=True)
    assert failed
    assert f"deeper than {MAX_WALK_DEPTH} levels" in text
    assert "nothing was copied" in text
    assert _leftovers(deep_root) == []


async def test_a_recursive_delete_of_a_2000_deep_tree_removes_it_all(
    deep_client: Client[Any], call: Any, deep_root: Path
) -> None:
    failed, text = await call(deep_client, "delete_path", path="deep", recursive=True)
    assert not failed, text
    assert text == "deleted directory deep"
    assert not (deep_root / "deep").exists()


def _set_immutable(path: Path, *, on: bool) -> bool:
    """chattr +i / -i through the ioctl; False where the filesystem or the user cannot."""
    get_flags, set_flags, immutable = 0x80086601, 0x40086602, 0x10
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        flags = array.array("i", [0])
        fcntl.ioctl(fd, get_flags, flags, True)
        flags[0] = flags[0] | immutable if on else flags[0] & ~immutable
        fcntl.ioctl(fd, set_flags, flags, True)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


async def test_a_recursive_delete_that_cannot_finish_says_what_remains(
    client: Client[Any], call: Any, root: Path
) -> None:
    """An immutable file (chattr +i stops even root) cannot go: the rest goes, and the answer names what stays."""
    (root / "tree" / "a" / "b").mkdir(parents=True)
    (root / "tree" / "a" / "gone.txt").write_text("x\n")
    (root / "tree" / "other").mkdir()
    stuck = root / "tree" / "a" / "b" / "stuck.txt"
    stuck.write_text("immutable\n")
    if not _set_immutable(stuck, on=True):
        pytest.skip("chattr +i is not available here (needs root and a filesystem with the flag, e.g. ext4)")
    try:
        failed, text = await call(client, "delete_path", path="tree", recursive=True)
    finally:
        _set_immutable(stuck, on=False)
    assert failed
    assert "tree/a/b/stuck.txt" in text
    assert "remain" in text
    assert "EPERM" in text, text
    assert sorted(str(p.relative_to(root)) for p in (root / "tree").rglob("*")) == [
        "tree/a",
        "tree/a/b",
        "tree/a/b/stuck.txt",
    ]


# --- nested roots ------------------------------------------------------------------------------------------


async def _copy_into_itself(client: Client[Any], call: Any, outer: Path) -> None:
    before = _snapshot_names(outer)
    failed, text = await call(client, "move_path", source=str(outer), destination=str(outer / "b" / "c"), copy=True)
    assert failed
    assert "cannot be copied into itself" in text
    assert _snapshot_names(outer) == before


def _snapshot_names(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


async def test_a_root_is_not_copied_into_its_own_subfolder_whatever_the_order_of_the_roots(
    make_server: Any, call: Any, tmp_path: Path
) -> None:
    outer = tmp_path / "A"
    (outer / "b").mkdir(parents=True)
    (outer / "b" / "f.txt").write_text("x\n")
    for roots in ((outer / "b", outer), (outer, outer / "b")):
        async with Client(make_server(*roots)) as client:
            await _copy_into_itself(client, call, outer)


async def test_client_roots_nested_inner_first_cannot_copy_a_root_into_itself(
    make_server: Any, call: Any, tmp_path: Path
) -> None:
    outer = tmp_path / "A"
    (outer / "b").mkdir(parents=True)
    client_roots = [(outer / "b").as_uri(), outer.as_uri()]
    async with Client(make_server(outer), mode="legacy", roots=client_roots) as client:
        await _copy_into_itself(client, call, outer)


# --- what the disk said ------------------------------------------------------------------------------------


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    tool = shutil.which(argv[0])
    if tool is None:
        pytest.skip(f"{argv[0]} is not installed")
    return subprocess.run([tool, *argv[1:]], capture_output=True, text=True, check=False)


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB tmpfs (needs root, or CAP_SYS_ADMIN: skipped with the reason where it cannot be mounted)."""
    target = tmp_path / "disk"
    target.mkdir()
    done = _run("mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(target))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield target
    _run("umount", "-l", str(target))


def _no_temp_files(directory: Path) -> bool:
    return not [p for p in directory.rglob("*") if p.name.endswith(".mcp-tmp")]


async def test_a_full_disk_says_so_and_every_failed_call_changes_nothing(
    make_server: Any, call: Any, snapshot: Any, mounted: Path
) -> None:
    (mounted / "tree").mkdir()
    (mounted / "tree" / "part.bin").write_bytes(b"p" * 400_000)
    (mounted / "grow.txt").write_text("marker\n" + "a" * 200_000)
    async with Client(make_server(mounted)) as client:
        failed, text = await call(client, "move_path", source="tree", destination="copy1", copy=True)
        assert not failed, text  # 800 KB of 1 MiB used now
        before = snapshot(mounted)
        attempts = [
            ("write_file", {"path": "big.txt", "content": "x" * 400_000}),
            ("write_file", {"path": "grow.txt", "content": "y" * 400_000}),
            ("edit_file", {"path": "grow.txt", "edits": [{"old_text": "marker", "new_text": "b" * 400_000}]}),
            ("move_path", {"source": "tree", "destination": "copy2", "copy": True}),
        ]
        for tool, arguments in attempts:
            failed, text = await call(client, tool, **arguments)
            assert failed, (tool, text)
            assert "no space left on the device (ENOSPC)" in text, (tool, text)
            assert "failed unexpectedly" not in text
            assert snapshot(mounted) == before, tool
            assert _no_temp_files(mounted), tool


async def test_a_read_only_mount_says_so_and_nothing_changes(
    make_server: Any, call: Any, snapshot: Any, mounted: Path, unfence: Any
) -> None:
    (mounted / "dir").mkdir()
    (mounted / "dir" / "a.txt").write_text("alpha\n")
    (mounted / "notes.txt").write_text("one\ntwo\n")
    done = _run("mount", "-o", "remount,ro", str(mounted))
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only here: {done.stderr.strip()}")
    before = snapshot(mounted)
    attempts = [
        ("write_file", {"path": "new.txt", "content": "x"}),
        ("write_file", {"path": "notes.txt", "content": "x"}),
        ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "two", "new_text": "2"}]}),
        ("create_directory", {"path": "made/below"}),
        ("move_path", {"source": "dir", "destination": "copy", "copy": True}),
        ("move_path", {"source": "notes.txt", "destination": "moved.txt"}),
        ("delete_path", {"path": "dir", "recursive": True}),
        ("delete_path", {"path": "notes.txt"}),
    ]
    async with Client(make_server(mounted)) as client:
        for tool, arguments in attempts:
            failed, text = await call(client, tool, **arguments)
            assert failed, (tool, text)
            assert "read-only (EROFS)" in text, (tool, text)
            assert snapshot(mounted) == before, tool
        failed, text = await call(client, "read_file", path="notes.txt")
        assert not failed
        assert unfence(text)[0] == "one\ntwo"


# --- a write over the transport's bound ------------------------------------------------------------------


def test_a_write_over_the_stdio_bound_is_answered_by_its_id_and_the_tools_bound_sits_under_it(tmp_path: Path) -> None:
    """The transport drops a line over MAX_LINE_BYTES unread; the id in its first or last bytes is still
    answered. Under that, write_file's own bound answers, and content at the bound arrives."""
    with StdioWire(python_module("mcp_server_filesystem", str(tmp_path), "--no-watch")) as wire:
        wire.initialize()
        huge = {"name": "write_file", "arguments": {"path": "huge.txt", "content": "x" * (9 * 1024 * 1024)}}
        wire.send({"jsonrpc": "2.0", "id": "first", "method": "tools/call", "params": huge})
        answer = wire.response_to("first", timeout=60)
        assert answer["error"]["code"] == -32600
        assert f"{MAX_LINE_BYTES:,} bytes" in answer["error"]["message"]
        id_last = json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": huge, "id": 41})
        wire.send(id_last)
        assert wire.response_to(41, timeout=60)["error"]["code"] == -32600
        over = {"path": "over.txt", "content": "y" * (MAX_WRITE_BYTES + 1)}
        result = wire.request("tools/call", {"name": "write_file", "arguments": over}, timeout=60)["result"]
        assert result["isError"] is True
        assert f"at most {MAX_WRITE_BYTES:,}" in result["content"][0]["text"]
        line = "z" * 99 + "\n"
        at_bound = {"path": "full.txt", "content": line * (MAX_WRITE_BYTES // len(line))}
        result = wire.request("tools/call", {"name": "write_file", "arguments": at_bound}, timeout=60)["result"]
        assert result.get("isError") is not True, result
    assert sorted(os.listdir(tmp_path)) == ["full.txt"]


# --- smaller ---------------------------------------------------------------------------------------------


async def test_a_symlink_loop_outside_the_roots_answers_as_any_outside_path(
    client: Client[Any], call: Any, outside: Path
) -> None:
    (outside / "loop1").symlink_to("loop2")
    (outside / "loop2").symlink_to("loop1")
    _, looping = await call(client, "read_file", path=str(outside / "loop1"))
    _, missing = await call(client, "read_file", path=str(outside / "nothing1"))
    assert looping.replace("loop1", "X") == missing.replace("nothing1", "X")
    assert "outside the allowed roots" in looping


async def test_a_trailing_slash_on_a_file_is_not_the_file(client: Client[Any], call: Any, root: Path) -> None:
    failed, text = await call(client, "read_file", path="notes.txt/")
    assert failed
    assert "ENOTDIR" in text
    failed, text = await call(client, "write_file", path="notes.txt/", content="clobbered")
    assert failed
    assert (root / "notes.txt").read_text() == "one\ntwo\nthree\n"
    failed, _ = await call(client, "read_file", path="src/")
    assert failed  # a directory with a slash is still a directory, not a file to read


async def test_a_nul_in_one_client_root_drops_that_root_only(make_server: Any, call: Any, root: Path) -> None:
    roots = [f"{root.as_uri()}/src%00evil", (root / "src").as_uri()]
    async with Client(make_server(root), mode="legacy", roots=roots) as client:
        failed, text = await call(client, "read_file", path="app.py")
        assert not failed, text
        assert "hello" in text
        failed, text = await call(client, "read_file", path=str(root / "notes.txt"))
        assert failed
        assert "outside the allowed roots" in text


async def test_client_roots_that_are_all_unusable_allow_nothing_and_say_why(
    make_server: Any, call: Any, root: Path, snapshot: Any
) -> None:
    roots = ["file://otherhost/repo", (root / "missing").as_uri(), f"{root.as_uri()}%00"]
    before = snapshot(root)
    async with Client(make_server(root), mode="legacy", roots=roots) as client:
        failed, text = await call(client, "read_file", path="notes.txt")
        assert failed
        assert "none of the client's 3 roots is usable" in text
        assert "one\ntwo" not in text
        failed, _ = await call(client, "write_file", path="new.txt", content="x")
        assert failed
    assert snapshot(root) == before
