"""The GitHub server passes the family's contract, with the default toolsets and with all of them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_github import TOKEN, FakeGitHub, running, server_for
from mcp_server_core import ReferenceServer
from mcp_server_core.testing import ContractSuite, python_module, tools_list_bytes

BUDGET = 9_000
# Every toolset on: what `--toolsets all` costs (measured; see the README).
ALL_BUDGET = 31_000

REPO = "acme/widgets"
UNREACHABLE = "http://127.0.0.1:9"


class TestContract(ContractSuite):
    budget = BUDGET
    secrets = (TOKEN,)

    @pytest.fixture
    def fake(self) -> Iterator[FakeGitHub]:
        yield from running()

    @pytest.fixture
    def server(self, fake: FakeGitHub) -> ReferenceServer:
        self.fake = fake
        return server_for(fake, toolsets=None)

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("get_issue", {"repo": REPO, "number": 999}),
            ("get_issue", {"repo": "acme/nothing", "number": 1}),
            ("list_issues", {"repo": REPO, "cursor": "not-a-cursor"}),
            ("create_issue", {"repo": "acme/locked", "title": "x"}),
            ("update_issue", {"repo": REPO, "number": 1}),
            ("add_issue_comment", {"repo": "acme/locked", "number": 1, "body": "x"}),
            ("search_issues", {"query": "is:issue repo:acme/widgets", "cursor": "eyJwIjp7fX0"}),
            ("enable_toolset", {"name": "pull_request"}),
        ]

    def state(self, server: ReferenceServer) -> Any:
        return self.fake.snapshot()

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("list_issues", {"repo": REPO, "limit": 5}),
            ("get_issue", {"repo": REPO, "number": 1}),
            ("search_issues", {"query": "repo:acme/widgets crash"}),
            ("list_labels", {"repo": REPO}),
        ]

    def stdio_command(self, tmp_path: Path) -> list[str]:
        # Nothing answers on port 9: the stdio session must not need GitHub to start, list tools or refuse one.
        return python_module("mcp_server_github", "--api-url", UNREACHABLE)

    def test_stdio_speaks_only_json_rpc_and_exits_when_stdin_closes(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)  # the token rides in the environment, never in argv
        super().test_stdio_speaks_only_json_rpc_and_exits_when_stdin_closes(tmp_path)


class TestContractAllToolsets(TestContract):
    budget = ALL_BUDGET

    @pytest.fixture
    def server(self, fake: FakeGitHub) -> ReferenceServer:
        self.fake = fake
        return server_for(fake)

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            *super().failing_calls(),
            ("get_file_contents", {"repo": REPO, "path": "missing.txt"}),
            ("get_file_contents", {"repo": REPO, "path": "src/../../secret/x"}),
            ("get_pull_request", {"repo": REPO, "number": 1}),
            ("create_pull_request", {"repo": REPO, "title": "t", "head": "nope", "base": "main"}),
            ("merge_pull_request", {"repo": REPO, "number": 46, "sha": "0" * 40}),
            ("review_pull_request", {"repo": REPO, "number": 46, "event": "REQUEST_CHANGES"}),
            ("create_or_update_file", {"repo": REPO, "path": "README.md", "content": "x", "message": "m"}),
            ("delete_file", {"repo": REPO, "path": "README.md", "message": "m", "sha": "0" * 40}),
            ("push_files", {"repo": REPO, "branch": "main", "message": "m", "delete": ["nope.txt"]}),
            (
                "push_files",
                {
                    "repo": REPO,
                    "branch": "main",
                    "message": "m",
                    "files": [],
                    "expected_sha": "0" * 40,
                    "delete": ["README.md"],
                },
            ),
            ("create_branch", {"repo": REPO, "branch": "feature"}),
            ("search_code", {"query": "repo:acme/widgets"}),
            ("list_workflow_jobs", {"repo": REPO, "run_id": 1}),
            ("get_job_log", {"repo": REPO, "job_id": 1}),
        ]

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            *super().sample_calls(),
            ("list_pull_requests", {"repo": REPO}),
            ("get_pull_request", {"repo": REPO, "number": 46}),
            ("get_pull_request_diff", {"repo": REPO, "number": 46, "limit": 200}),
            ("get_pull_request_reviews", {"repo": REPO, "number": 46}),
            ("get_pull_request_status", {"repo": REPO, "number": 46}),
            ("get_file_contents", {"repo": REPO, "path": "src/util.py"}),
            ("get_file_contents", {"repo": REPO}),
            ("get_repository_tree", {"repo": REPO}),
            ("list_branches", {"repo": REPO}),
            ("list_tags", {"repo": REPO}),
            ("list_commits", {"repo": REPO}),
            ("get_commit", {"repo": REPO, "sha": "main"}),
            ("get_commit_diff", {"repo": REPO, "sha": "main...feature"}),
            ("compare_commits", {"repo": REPO, "base": "main", "head": "feature"}),
            ("list_releases", {"repo": REPO}),
            ("search_code", {"query": "def add"}),
            ("search_repositories", {"query": "widgets"}),
            ("search_users", {"query": "ali"}),
            ("list_workflow_runs", {"repo": REPO}),
            ("list_workflow_jobs", {"repo": REPO, "run_id": 700}),
        ]


async def test_default_toolsets_fit_the_budget_and_all_of_them_are_measured(fake: FakeGitHub) -> None:
    default = await tools_list_bytes(server_for(fake, toolsets=None))
    everything = await tools_list_bytes(server_for(fake))
    assert default <= BUDGET
    assert BUDGET < everything <= ALL_BUDGET


async def test_read_only_lists_less_than_the_default(fake: FakeGitHub) -> None:
    assert await tools_list_bytes(server_for(fake, toolsets=None, read_only=True)) < await tools_list_bytes(
        server_for(fake, toolsets=None)
    )
