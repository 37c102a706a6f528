"""Containment, case by case from the issue: the server refuses, leaks nothing and changes nothing outside.

Each case runs through the protocol (the in-memory client), except the races, which need the moment between
the check and the use: those drive the sandbox directly, swapping a directory for a symlink in between.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core import Refused, ToolFailure
from mcp_server_filesystem.sandbox import Sandbox

SECRET = "TOP SECRET"


def names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


async def assert_refused(client: Client[Any], call: Any, root: Path, tool: str, **arguments: Any) -> str:
    failed, text = await call(client, tool, **arguments)
    assert failed, f"{tool}({arguments}) should be refused: {text}"
    assert SECRET not in text
    assert str(root) in text, f"the error must name the allowed roots: {text}"
    return text


@pytest.fixture
def evil_siblings(tmp_path: Path) -> list[Path]:
    made = []
    for name in ("allowed_evil", "allowed'", "allowed ", "allowed.bak"):
        sibling = tmp_path / name
        sibling.mkdir()
        (sibling / "secret.txt").write_text(SECRET)
        made.append(sibling)
    return made


async def test_prefix_siblings_are_outside(
    client: Client[Any], call: Any, root: Path, evil_siblings: list[Path]
) -> None:
    for sibling in evil_siblings:
        await assert_refused(client, call, root, "read_file", path=str(sibling / "secret.txt"))
        await assert_refused(client, call, root, "write_file", path=str(sibling / "new.txt"), content="x")
        await assert_refused(client, call, root, "list_directory", path=str(sibling))
        assert not (sibling / "new.txt").exists()


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "src/../../outside/secret.txt",
        "./../outside/secret.txt",
        "src/./../../outside/./secret.txt",
        "src//..//..//outside//secret.txt",
        "../allowed/../outside/secret.txt",
        "..",
        "../..",
    ],
)
async def test_dot_dot_in_every_form_is_refused(
    client: Client[Any], call: Any, root: Path, outside: Path, path: str
) -> None:
    await assert_refused(client, call, root, "read_file", path=path)
    await assert_refused(client, call, root, "read_file", path=f"{root}/{path}")
    await assert_refused(client, call, root, "write_file", path=f"{path}/planted.txt", content="x")
    assert names(outside) == ["secret.txt"]


async def test_dot_dot_that_stays_inside_is_fine(client: Client[Any], call: Any) -> None:
    failed, text = await call(client, "read_file", path="src/../notes.txt")
    assert not failed
    assert "```text\none\n" in text


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/",
        "/proc/self/environ",
        "~",
        "~/.bashrc",
        "~root/.ssh/id_rsa",
        "C:\\Windows\\win.ini",
        "c:/Users/x",
        "D:",
        "\\\\server\\share\\x",
        "notes.txt\x00.png",
        "\x00",
        "a/" * 3000,
    ],
)
async def test_outside_home_windows_and_nul_paths_are_refused(
    client: Client[Any], call: Any, root: Path, snapshot: Any, path: str
) -> None:
    before = snapshot(root)
    for tool, arguments in [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("list_directory", {"path": path}),
        ("delete_path", {"path": path}),
    ]:
        await assert_refused(client, call, root, tool, **arguments)
    assert snapshot(root) == before


async def test_absolute_path_outside_is_refused_and_leaks_nothing(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    text = await assert_refused(client, call, root, "read_file", path=str(outside / "secret.txt"))
    assert "outside the allowed roots" in text
    missing = await assert_refused(client, call, root, "read_file", path=str(outside / "missing.txt"))
    # The same answer whether or not the outside file exists: nothing to probe with.
    assert missing.replace("missing.txt", "secret.txt") == text


async def test_file_symlink_leading_outside_is_refused_for_read_write_and_metadata(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "rel.txt").symlink_to(Path("..") / "outside" / "secret.txt")
    for name in ("link.txt", "rel.txt"):
        text = await assert_refused(client, call, root, "read_file", path=name)
        assert "symlink" in text
        assert str(outside) not in text
        await assert_refused(client, call, root, "write_file", path=name, content="overwritten")
        await assert_refused(client, call, root, "edit_file", path=name, edits=[{"old_text": "TOP", "new_text": "x"}])
        await assert_refused(client, call, root, "move_path", source=name, destination="copy.txt", copy=True)
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    # Metadata of the link itself only: no size or time of the outside target, and no outside path.
    failed, text = await call(client, "list_directory", path="link.txt")
    assert not failed
    assert "type: symlink" in text
    assert "outside the roots" in text
    assert "size" not in text
    assert str(outside) not in text
    failed, listing = await call(client, "list_directory")
    assert "link.txt@ -> (outside the roots or broken)" in listing
    assert "11B" not in listing


async def test_directory_symlink_and_chains_leading_outside_are_refused(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    (root / "door").symlink_to(outside, target_is_directory=True)
    (root / "hop1").symlink_to("hop2")
    (root / "hop2").symlink_to("hop3")
    (root / "hop3").symlink_to(outside / "secret.txt")
    await assert_refused(client, call, root, "read_file", path="door/secret.txt")
    await assert_refused(client, call, root, "list_directory", path="door/")
    failed, text = await call(client, "list_directory", path="door")
    assert not failed
    assert "type: symlink" in text
    assert "secret.txt" not in text
    await assert_refused(client, call, root, "write_file", path="door/planted.txt", content="x")
    await assert_refused(client, call, root, "create_directory", path="door/sub")
    await assert_refused(client, call, root, "read_file", path="hop1")
    assert names(outside) == ["secret.txt"]


async def test_symlink_chain_that_stays_inside_is_followed(client: Client[Any], call: Any, root: Path) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("notes.txt")
    failed, text = await call(client, "read_file", path="a")
    assert not failed
    assert "```text\none\n" in text


async def test_write_through_dangling_symlink_creates_nothing_outside(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    (root / "dangling.txt").symlink_to(outside / "created-by-attack.txt")
    (root / "dangling-dir").symlink_to(outside / "no-such-dir")
    await assert_refused(client, call, root, "write_file", path="dangling.txt", content="x")
    await assert_refused(client, call, root, "write_file", path="dangling-dir/f.txt", content="x")
    await assert_refused(client, call, root, "create_directory", path="dangling-dir/a/b")
    await assert_refused(client, call, root, "move_path", source="notes.txt", destination="dangling-dir/n.txt")
    assert not (outside / "created-by-attack.txt").exists()
    assert not (outside / "no-such-dir").exists()
    assert (root / "notes.txt").exists()


async def test_symlink_loops_are_refused_and_never_hang(client: Client[Any], call: Any, root: Path) -> None:
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "self").symlink_to("self")
    (root / "src" / "up").symlink_to("..", target_is_directory=True)
    text = await assert_refused(client, call, root, "read_file", path="loop1")
    assert "loop" in text
    await assert_refused(client, call, root, "write_file", path="self", content="x")
    failed, tree = await call(client, "show_tree", depth=10)
    assert not failed
    assert "up@" in tree
    assert tree.count("app.py") == 1
    failed, found = await call(client, "search_text", query="hello")
    assert not failed
    assert found.count("app.py") == 1


async def test_tree_find_and_search_never_descend_links_that_leave(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    (root / "door").symlink_to(outside, target_is_directory=True)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    for everything in (False, True):
        failed, tree = await call(client, "show_tree", depth=5, everything=everything)
        assert not failed
        assert "door@" in tree
        assert "secret.txt" not in tree
        failed, found = await call(client, "find_files", pattern="*secret*", everything=everything)
        assert not failed
        assert "secret-link.txt" in found
        assert "door/" not in found
        failed, hits = await call(client, "search_text", query=SECRET, everything=everything)
        assert not failed
        assert "No match" in hits


async def test_moves_in_and_out_of_the_roots_are_refused(
    client: Client[Any], call: Any, root: Path, outside: Path, snapshot: Any
) -> None:
    inside_before, outside_before = snapshot(root), snapshot(outside)
    await assert_refused(client, call, root, "move_path", source=str(outside / "secret.txt"), destination="stolen.txt")
    await assert_refused(client, call, root, "move_path", source="notes.txt", destination=str(outside / "n.txt"))
    await assert_refused(
        client, call, root, "move_path", source=str(outside / "secret.txt"), destination="s.txt", copy=True
    )
    await assert_refused(client, call, root, "move_path", source="src", destination=str(outside / "src"), copy=True)
    assert snapshot(root) == inside_before
    assert snapshot(outside) == outside_before


async def test_moving_or_deleting_a_symlink_acts_on_the_link_never_its_target(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    failed, text = await call(client, "move_path", source="link.txt", destination="renamed.txt")
    assert not failed, text
    assert (root / "renamed.txt").is_symlink()
    failed, text = await call(client, "delete_path", path="renamed.txt")
    assert not failed
    assert "symlink" in text
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


async def test_roots_themselves_cannot_be_deleted_or_moved(client: Client[Any], call: Any, root: Path) -> None:
    await assert_refused(client, call, root, "delete_path", path=".", recursive=True)
    await assert_refused(client, call, root, "delete_path", path=str(root), recursive=True)
    await assert_refused(client, call, root, "move_path", source=".", destination="elsewhere")
    assert (root / "notes.txt").exists()


# --- races: a parent directory swapped for a symlink between the check and the use ------------------------


def _swap_for_link(directory: Path, target: Path) -> None:
    directory.rename(directory.with_name(directory.name + ".orig"))
    directory.symlink_to(target, target_is_directory=True)


def test_parent_swapped_for_a_symlink_during_a_write_writes_nothing_outside(root: Path, outside: Path) -> None:
    box = Sandbox([str(root)])
    location = box.locate("src/new.txt")
    _swap_for_link(root / "src", outside)  # the attacker wins the race after the check
    with pytest.raises(Refused) as raised:
        box.write_atomic(location, b"planted")
    assert "symlink" in str(raised.value)
    assert names(outside) == ["secret.txt"]


def test_parent_swapped_for_a_symlink_during_a_read_reads_nothing_outside(root: Path, outside: Path) -> None:
    box = Sandbox([str(root)])
    (root / "src" / "secret.txt").write_text("inside")
    location = box.locate("src/secret.txt")
    _swap_for_link(root / "src", outside)
    with pytest.raises(Refused):
        box.read_bytes(location)


def test_leaf_swapped_for_a_symlink_is_not_followed(root: Path, outside: Path) -> None:
    box = Sandbox([str(root)])
    location = box.locate("notes.txt")
    (root / "notes.txt").unlink()
    (root / "notes.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(Refused):
        box.read_bytes(location)
    with pytest.raises(ToolFailure):
        box.write_atomic(location, b"overwritten")
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


def test_deep_parent_swapped_during_a_mkdir_creates_nothing_outside(root: Path, outside: Path) -> None:
    box = Sandbox([str(root)])
    location = box.locate("src/a/b/c")
    _swap_for_link(root / "src", outside)
    with pytest.raises(Refused):
        box.make_directory(location)
    assert not (outside / "a").exists()


# --- special files -------------------------------------------------------------------------------------------


async def test_fifo_is_refused_without_hanging(client: Client[Any], call: Any, root: Path) -> None:
    os.mkfifo(root / "pipe")
    text = await assert_refused(client, call, root, "read_file", path="pipe")
    assert "FIFO" in text
    await assert_refused(client, call, root, "write_file", path="pipe", content="x")
    await assert_refused(client, call, root, "edit_file", path="pipe", edits=[{"old_text": "a", "new_text": "b"}])
    failed, _ = await call(client, "search_text", query="anything")
    assert not failed  # the walk skips it instead of blocking on it
    failed, text = await call(client, "read_file", path=["pipe", "notes.txt"])
    assert not failed
    assert "FIFO" in text
    assert "one\ntwo" in text


async def test_device_files_are_refused_without_reading_them(make_server: Any, call: Any) -> None:
    async with Client(make_server(Path("/dev"))) as client:
        for device in ("zero", "null", "urandom"):
            failed, text = await call(client, "read_file", path=device)
            assert failed, text
            assert "device" in text
            assert "/dev" in text
            failed, text = await call(client, "write_file", path=device, content="x")
            assert failed, text
            assert "device" in text


# --- hard links and Unicode ----------------------------------------------------------------------------------


async def test_hard_link_is_read_but_a_write_never_reaches_the_other_name(
    client: Client[Any], call: Any, root: Path, outside: Path
) -> None:
    os.link(outside / "secret.txt", root / "linked.txt")
    failed, text = await call(client, "read_file", path="linked.txt")
    assert not failed
    assert SECRET in text
    failed, text = await call(client, "list_directory", path="linked.txt")
    assert "links: 2" in text
    await call(client, "write_file", path="linked.txt", content="replaced\n")
    await call(client, "edit_file", path="linked.txt", edits=[{"old_text": "replaced", "new_text": "edited"}])
    assert (root / "linked.txt").read_text() == "edited\n"
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


async def test_unicode_normalisation_variant_of_a_root_is_another_directory(
    tmp_path: Path, make_server: Any, call: Any
) -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    (tmp_path / nfc).mkdir()
    (tmp_path / nfd).mkdir()
    (tmp_path / nfd / "secret.txt").write_text(SECRET)
    (tmp_path / nfc / f"{nfc}.txt").write_text("inside\n")
    async with Client(make_server(tmp_path / nfc)) as client:
        failed, text = await call(client, "read_file", path=str(tmp_path / nfd / "secret.txt"))
        assert failed
        assert SECRET not in text
        assert "outside" in text
        failed, text = await call(client, "read_file", path=f"{nfd}.txt")
        assert failed
        assert "normalisation" in text
        assert f"{nfc}.txt" in text
