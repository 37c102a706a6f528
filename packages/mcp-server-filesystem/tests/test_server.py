"""The filesystem server passes the family's contract; its command line, read-only mode and tools/list snapshot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import ContractSuite, StdioWire, python_module, tools_list_bytes
from mcp_server_filesystem.server import build_server
from mcp_server_filesystem.settings import FilesystemSettings

BUDGET = 5_600
SNAPSHOT = Path(__file__).with_name("tools_list.json")
WRITERS = {"write_file", "edit_file", "create_directory", "move_path", "delete_path"}


class TestContract(ContractSuite):
    budget = BUDGET

    @pytest.fixture
    def server(self, root: Path, outside: Path) -> ReferenceServer:
        self.root, self.outside = root, outside
        (root / "notes.txt").write_text("one\ntwo\nthree\n")
        return build_server(FilesystemSettings(roots=[root], watch=False))

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("read_file", {"path": "missing.txt"}),
            ("read_file", {"path": str(self.outside / "secret.txt")}),
            ("read_file", {"path": "notes.txt", "offset": 99}),
            ("write_file", {"path": "notes.txt", "content": "clobbered", "create_only": True}),
            ("write_file", {"path": "../outside/planted.txt", "content": "x"}),
            ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "four", "new_text": "4"}]}),
            ("edit_file", {"path": "notes.txt", "edits": [{"old_text": "o", "new_text": "0"}]}),
            (
                "edit_file",
                {"path": "notes.txt", "edits": [{"old_text": "one", "new_text": "1"}], "expected_sha256": "deadbeef"},
            ),
            ("delete_path", {"path": "src"}),
            ("delete_path", {"path": "missing"}),
            ("move_path", {"source": "notes.txt", "destination": "src/app.py"}),
            ("move_path", {"source": "src", "destination": "src/inner"}),
            ("create_directory", {"path": "notes.txt"}),
            ("list_directory", {"cursor": "not-a-cursor"}),
            ("search_text", {"query": "([", "regex": True}),
        ]

    def state(self, server: ReferenceServer) -> Any:
        return _tree_state(self.root), _tree_state(self.outside)

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("list_directory", {}),
            ("list_directory", {"path": "notes.txt"}),
            ("find_files", {"pattern": "*.py"}),
            ("search_text", {"query": "two", "context": 1}),
        ]

    def stdio_command(self, tmp_path: Path) -> list[str]:
        (tmp_path / "served").mkdir(exist_ok=True)
        return python_module("mcp_server_filesystem", str(tmp_path / "served"))


def _tree_state(directory: Path) -> list[tuple[str, bytes | None]]:
    return sorted(
        (str(p.relative_to(directory)), p.read_bytes() if p.is_file() else None) for p in directory.rglob("*")
    )


async def test_tools_list_matches_its_snapshot(root: Path) -> None:
    """Every schema change is a reviewed diff: regenerate with UPDATE_SNAPSHOTS=1 and read the diff."""
    server = build_server(FilesystemSettings(roots=[root], watch=False))
    async with Client(server, mode="legacy") as client:
        listed = await client.list_tools_mcp()
    tools = listed.model_dump(by_alias=True, mode="json", exclude_none=True)["tools"]
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(tools, indent=1) + "\n")
    assert tools == json.loads(SNAPSHOT.read_text())
    assert await tools_list_bytes(server) <= BUDGET


async def test_read_only_mode_registers_no_tool_that_writes(root: Path) -> None:
    server = build_server(FilesystemSettings(roots=[root], read_only=True, watch=False))
    async with Client(server) as client:
        names = {tool.name for tool in await client.list_tools()}
    assert names == {"read_file", "list_directory", "show_tree", "find_files", "search_text"}
    assert not names & WRITERS


async def test_every_writing_tool_is_marked_destructive_or_additive(root: Path) -> None:
    async with Client(build_server(FilesystemSettings(roots=[root], watch=False))) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
    assert set(tools) >= WRITERS
    for name in ("write_file", "edit_file", "move_path", "delete_path"):
        hints = tools[name].annotations
        assert hints is not None, name
        assert hints.destructive_hint is True, name
        assert hints.read_only_hint is False, name
    assert tools["create_directory"].annotations is not None
    assert tools["create_directory"].annotations.destructive_hint is False


def test_roots_are_resolved_to_real_paths_at_start(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    settings = FilesystemSettings(roots=[tmp_path / "alias", real, tmp_path / "alias" / "."])
    assert settings.roots == [real.resolve()]


def test_roots_come_from_the_environment_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("MCP_FS_ROOTS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert FilesystemSettings().roots == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]


def _cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_server_filesystem", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_the_command_line_refuses_no_directory_and_a_missing_one(tmp_path: Path) -> None:
    none = _cli()
    assert none.returncode == 2
    assert "at least one DIR" in none.stderr
    missing = _cli(str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "is not a directory" in missing.stderr


def test_print_config_names_the_directories(tmp_path: Path) -> None:
    printed = _cli(str(tmp_path), "--read-only", "--print-config", "claude")
    assert printed.returncode == 0, printed.stderr
    config = json.loads(printed.stdout)
    assert config == {
        "mcpServers": {
            "filesystem": {"command": "uvx", "args": ["mcp-server-filesystem", str(tmp_path), "--read-only"]}
        }
    }


def test_print_config_from_a_project_folder_names_it_absolutely_with_the_shells_settings(tmp_path: Path) -> None:
    """`cd project && mcp-server-filesystem . --print-config claude`: a host started from / must not serve /."""
    printed = _cli(".", "--print-config", "claude", cwd=tmp_path, env={"MCP_FS_READ_ONLY": "1"})
    assert printed.returncode == 0, printed.stderr
    args = json.loads(printed.stdout)["mcpServers"]["filesystem"]["args"]
    assert args == ["mcp-server-filesystem", os.path.realpath(tmp_path), "--read-only"]


def test_the_console_script_serves_over_stdio(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "mcp-server-filesystem"
    (tmp_path / "hello.txt").write_text("hi\n")
    with StdioWire([str(script), str(tmp_path), "--no-watch"]) as wire:
        wire.initialize()
        answer = wire.request("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}})
        assert answer["result"]["content"][0]["text"].endswith("```text\nhi\n```")
        assert wire.close() == 0
