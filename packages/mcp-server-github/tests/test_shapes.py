"""What the text shows of GitHub's `null`s (issue 16), and the checks on the parameter types every tool shares."""

from __future__ import annotations

import re

import pytest
from fake_github import FakeGitHub, server_for, text_of
from fastmcp import Client

REPO = "acme/widgets"
# Every read tool, on data where GitHub sends nulls: a draft release (published_at, name, body), a run with no
# conclusion and no branch, check runs in progress, an issue without a description, a commit by no GitHub user.
READS = [
    ("list_releases", {"repo": REPO}),
    ("list_workflow_runs", {"repo": REPO}),
    ("list_workflow_jobs", {"repo": REPO, "run_id": 700}),
    ("list_issues", {"repo": REPO, "state": "all", "limit": 100}),
    ("get_issue", {"repo": REPO, "number": 44}),
    ("search_issues", {"query": f"repo:{REPO} number"}),
    ("list_pull_requests", {"repo": REPO, "state": "all"}),
    ("get_pull_request", {"repo": REPO, "number": 46}),
    ("get_pull_request_reviews", {"repo": REPO, "number": 46}),
    ("get_pull_request_status", {"repo": REPO, "number": 46}),
    ("list_commits", {"repo": REPO}),
    ("get_commit", {"repo": REPO, "sha": "feature"}),
    ("compare_commits", {"repo": REPO, "base": "v1.0", "head": "feature"}),
    ("list_labels", {"repo": REPO}),
    ("list_branches", {"repo": REPO}),
    ("list_tags", {"repo": REPO}),
    ("search_repositories", {"query": "widgets"}),
    ("search_users", {"query": "alice"}),
    ("get_me", {}),
]


@pytest.mark.parametrize(("tool", "arguments"), READS, ids=[name for name, _ in READS])
async def test_no_null_reaches_the_text_as_none(fake: FakeGitHub, tool: str, arguments: dict[str, object]) -> None:
    fake.commit(fake.repos[REPO], "feature", "By someone GitHub does not know", {"x.txt": b"x\n"}, author="stranger")
    async with Client(server_for(fake)) as client:
        result = await client.call_tool_mcp(tool, arguments)
    assert not result.is_error, text_of(result)
    assert not re.search(r"\bNone\b", text_of(result)), text_of(result)


async def test_a_draft_release_says_it_is_unpublished(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("list_releases", {"repo": REPO})
    assert text_of(result).startswith("v2.0-rc1 unpublished prerelease draft\n")
    assert "published" not in result.structured_content["items"][0]


async def test_a_deleted_accounts_comment_reads_as_by_ghost(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("get_issue", {"repo": REPO, "number": 44})
    assert "comment of 2026-11-30 by ghost (no association with the repository)" in text_of(result)


# The schema no longer spells these checks out (issue 15): the validators must still stop the call before GitHub.
MALFORMED = [
    ("get_issue", {"repo": "widgets", "number": 1}, "owner/name"),
    ("get_issue", {"repo": "acme/widgets/issues", "number": 1}, "owner/name"),
    ("get_issue", {"repo": "acme/widgets\n", "number": 1}, "owner/name"),
    ("get_issue", {"repo": REPO, "number": 0}, "1 or more"),
    ("get_file_contents", {"repo": REPO, "path": "README.md", "start_line": 0}, "1 or more"),
    ("get_job_log", {"repo": REPO, "job_id": -3}, "1 or more"),
    ("create_issue", {"repo": REPO, "title": ""}, "should not be empty"),
    ("search_code", {"query": ""}, "should not be empty"),
    ("delete_file", {"repo": REPO, "path": "README.md", "message": "", "sha": "0" * 40}, "should not be empty"),
]


@pytest.mark.parametrize(("tool", "arguments", "said"), MALFORMED, ids=[str(a) for _, a, _ in MALFORMED])
async def test_a_malformed_repository_or_number_is_refused_before_any_request(
    fake: FakeGitHub, tool: str, arguments: dict[str, object], said: str
) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    assert said in text_of(result)
    assert fake.count() == 0


async def test_false_flags_and_absent_counts_are_left_out(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        branches = await client.call_tool("list_branches", {"repo": REPO})
        pulls = await client.call_tool("list_pull_requests", {"repo": REPO})
        runs = await client.call_tool("list_workflow_runs", {"repo": REPO})
    feature = next(b for b in branches.structured_content["items"] if b["name"] == "feature")
    assert set(feature) == {"name", "sha"}
    assert "draft" not in pulls.structured_content["items"][0]
    assert all("attempt" not in run for run in runs.structured_content["items"])
