"""The MCP Bundles (`make bundles`): each manifest passes `mcpb validate`, and each bundle, unpacked, starts the
way its manifest says (uv run in the bundle's folder, the user's settings substituted) and answers a client."""

from __future__ import annotations

import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mcp_server_core.testing import StdioWire

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("bundles", ROOT / "scripts" / "bundles.py")
assert _spec is not None
assert _spec.loader is not None
bundles = importlib.util.module_from_spec(_spec)
sys.modules["bundles"] = bundles
_spec.loader.exec_module(bundles)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not bundles.MCPB.exists():
        pytest.fail("the mcpb CLI is not installed: run `make bundle-deps` (make test does)")
    out = tmp_path_factory.mktemp("bundles")
    return {path.stem: path for path in bundles.build(out)}


def _launch(bundle: Path, folder: Path, user_config: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Unpack `bundle` and read its manifest's command as a host does: ${__dirname} and ${user_config.*}."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    config = manifest["server"]["mcp_config"]

    def substitute(text: str) -> list[str]:
        if text.startswith("${user_config.") and isinstance(user_config.get(text[14:-1]), list):
            return list(user_config[text[14:-1]])  # a multiple selection becomes one argument each
        text = text.replace("${__dirname}", str(folder))
        for key, value in user_config.items():
            text = text.replace(
                f"${{user_config.{key}}}", str(value).lower() if isinstance(value, bool) else str(value)
            )
        return [text]

    argv = [config["command"]] + [part for arg in config["args"] for part in substitute(arg)]
    env = {key: substitute(value)[0] for key, value in config.get("env", {}).items()}
    return argv, env


def test_the_filesystem_bundle_serves_the_folders_the_user_picked(built: dict[str, Path], tmp_path: Path) -> None:
    picked = tmp_path / "picked"
    picked.mkdir()
    (picked / "hello.txt").write_text("hi\n")
    argv, env = _launch(
        built["mcp-server-filesystem"], tmp_path / "unpacked", {"allowed_directories": [str(picked)], "read_only": True}
    )
    with StdioWire(argv, env=env) as wire:
        wire.initialize(timeout=180)
        names = {t["name"] for t in wire.request("tools/list")["result"]["tools"]}
        read = wire.request("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}})
    assert "read_file" in names
    assert "write_file" not in names, "the user's read-only choice reached the server"
    assert read["result"]["content"][0]["text"].endswith("```text\nhi\n```")  # read_file fences what it reads


def test_the_db_bundle_serves_its_sample_when_no_url_is_given(built: dict[str, Path], tmp_path: Path) -> None:
    argv, env = _launch(built["mcp-server-db"], tmp_path / "unpacked", {"database_url": ""})
    with StdioWire(argv, env=env) as wire:
        wire.initialize(timeout=180)
        answer = wire.request(
            "tools/call", {"name": "run_query", "arguments": {"sql": "SELECT count(*) AS n FROM customers"}}
        )
    assert answer["result"]["isError"] is False
    manifest = json.loads((tmp_path / "unpacked" / "manifest.json").read_text())
    assert manifest["user_config"]["database_url"]["sensitive"] is True
    assert "database_url" not in json.dumps(manifest["server"]["mcp_config"]["args"]), "a URL may hold a password"
    assert {t["name"] for t in manifest["tools"]} >= {"find_objects", "describe_tables", "run_query"}
