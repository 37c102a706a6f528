"""Integrity (issue 26): no lost update, no half-done work, errors that say what the disk said.

Each test checks the effect on the real tree (or the spawned server's memory), not only the answer.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from mcp_server_core.testing import StdioWire, python_module

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
