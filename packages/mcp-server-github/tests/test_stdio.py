"""The server as a user runs it: a subprocess over stdio, configured by environment and flags, against the fake."""

from __future__ import annotations

import json
import subprocess

import pytest
from fake_github import TOKEN, FakeGitHub
from mcp_server_core.testing import HttpWire, StdioWire, python_module, spawn_http_server


def test_a_stdio_session_reads_an_issue_from_the_fake_with_the_token_from_the_environment(fake: FakeGitHub) -> None:
    argv = python_module("mcp_server_github", "--api-url", fake.url, "--log-level", "DEBUG")
    with StdioWire(argv, env={"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN}) as wire:
        assert "result" in wire.initialize()
        assert fake.count() == 0, "starting and initializing make no request to GitHub"
        listed = wire.request("tools/list")["result"]["tools"]
        called = wire.request("tools/call", {"name": "get_issue", "arguments": {"repo": "acme/widgets", "number": 7}})
        assert wire.close() == 0
        stderr = wire.stderr
    assert "get_issue" in {t["name"] for t in listed}
    text = called["result"]["content"][0]["text"]
    assert "by mallory (no association with the repository)" in text
    assert "acme/secret" not in text
    assert [r.path for r in fake.requests] == ["/repos/acme/widgets/issues/7", "/repos/acme/widgets/issues/7/comments"]
    assert fake.requests[0].headers["authorization"] == f"token {TOKEN}"
    assert "GET /repos/acme/widgets/issues/7" in stderr, "DEBUG logs every request"
    assert TOKEN not in stderr


def test_read_only_and_repos_flags_reach_the_server(fake: FakeGitHub) -> None:
    argv = python_module(
        "mcp_server_github", "--api-url", fake.url, "--read-only", "--repos", "acme/widgets", "--toolsets", "all"
    )
    with StdioWire(argv, env={"GITHUB_TOKEN": TOKEN}) as wire:
        wire.initialize()
        names = {t["name"] for t in wire.request("tools/list")["result"]["tools"]}
        refused = wire.request("tools/call", {"name": "list_issues", "arguments": {"repo": "acme/secret"}})
        assert wire.close() == 0
    assert "push_files" not in names
    assert "get_file_contents" in names
    assert refused["result"]["isError"] is True
    assert fake.count() == 0


def test_it_starts_and_lists_tools_with_a_dummy_token_and_nothing_listening() -> None:
    argv = python_module("mcp_server_github", "--api-url", "http://127.0.0.1:9")
    with StdioWire(argv, env={"GITHUB_TOKEN": "dummy"}) as wire:
        assert "result" in wire.initialize()
        tools = wire.request("tools/list")["result"]["tools"]
        failed = wire.request("tools/call", {"name": "get_me", "arguments": {}})
        assert wire.close() == 0
    assert len(tools) == 10
    assert failed["result"]["isError"] is True
    assert "Cannot reach GitHub at http://127.0.0.1:9" in failed["result"]["content"][0]["text"]


@pytest.mark.parametrize("host", ["claude", "vscode"])
def test_print_config_gives_a_host_snippet_without_the_token(host: str) -> None:
    out = subprocess.run(
        [*python_module("mcp_server_github", "--repos", "acme/*", "--print-config", host)],
        capture_output=True,
        text=True,
        check=True,
        env={"GITHUB_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"},
    ).stdout
    snippet = json.loads(out)
    servers = snippet["servers" if host == "vscode" else "mcpServers"]
    assert servers["github"]["args"] == ["mcp-server-github", "--repos", "acme/*"]
    assert servers["github"]["env"] == {"GITHUB_TOKEN": "your-github-token"}  # a name to fill in, not our token
    assert TOKEN not in out


def test_a_malformed_allow_list_stops_the_server_with_a_message() -> None:
    done = subprocess.run(
        python_module("mcp_server_github", "--repos", "acme"), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert "repos: Value error, repos: 'acme' is not owner/name or owner/*" in done.stderr


def test_streamable_http_serves_the_same_tools_against_the_fake(fake: FakeGitHub) -> None:
    argv = python_module("mcp_server_github", "--api-url", fake.url, "--toolsets", "default,pull_requests")
    with spawn_http_server(argv, env={"GITHUB_TOKEN": TOKEN}) as (url, _process), HttpWire(url) as wire:
        assert "result" in wire.initialize()
        called = wire.request(
            "tools/call", {"name": "get_pull_request", "arguments": {"repo": "acme/widgets", "number": 46}}
        )
    assert called["result"]["structuredContent"]["item"]["head"] == "acme:feature"
    assert [r.path for r in fake.requests] == ["/repos/acme/widgets/pulls/46", "/repos/acme/widgets/pulls/46/files"]
