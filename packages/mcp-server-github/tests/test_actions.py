"""Actions against the fake: runs, jobs with their failed steps, and the tail of a log fetched by range."""

from __future__ import annotations

from fake_github import TOKEN, FakeGitHub, server_for, text_of
from fastmcp import Client

REPO = "acme/widgets"


async def test_runs_and_jobs_show_what_failed(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        runs = await client.call_tool("list_workflow_runs", {"repo": REPO, "workflow": "ci.yml", "limit": 2})
        jobs = (await client.call_tool("list_workflow_jobs", {"repo": REPO, "run_id": 700})).structured_content
    first = runs.structured_content["items"][0]
    assert (first["id"], first["conclusion"], first["workflow"]) == (700, "failure", "CI")
    assert "next_cursor" in runs.structured_content
    assert fake.requests[0].path == f"/repos/{REPO}/actions/workflows/ci.yml/runs"
    assert jobs["items"] == [
        {
            "id": 9001,
            "name": "test",
            "status": "completed",
            "conclusion": "failure",
            "failed_steps": ["pytest"],
            "started": "2026-11-30T12:00:00Z",
            "completed": "2026-11-30T12:00:00Z",
        }
    ]


async def test_the_log_tail_is_fetched_by_range_without_the_token_and_cleaned(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("get_job_log", {"repo": REPO, "job_id": 9001, "tail_lines": 3})
    log, blob = fake.requests
    assert log.path == f"/repos/{REPO}/actions/jobs/9001/logs"
    assert log.headers["authorization"] == f"token {TOKEN}"
    assert blob.path == "/_blobs/job-logs-9001.txt"
    assert "authorization" not in blob.headers
    assert blob.headers["range"].startswith("bytes=-")
    text = text_of(result)
    assert text.startswith("last 3 lines of the log of job 9001\n[untrusted data: log of job 9001")
    assert "step line 2999\nstep line 3000\nFAILED tests/test_util.py::test_mul - AssertionError\n```" in text
    assert "\x1b" not in text
    assert "[32m" not in text
    assert "2026-11-30T" not in text
