"""Actions: workflow runs, their jobs and steps, and the tail of a job's log."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from mcp_server_core import Cursor, Limit, Toolset, Unavailable, report_progress
from pydantic import Field

from mcp_server_github.client import GitHubApi
from mcp_server_github.repos import segment
from mcp_server_github.shapes import Listing, Number, RepoName, compact, fenced, fenced_lines, one_line, said

LOG_BYTES = 12_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ", re.MULTILINE)
RunStatus = Literal["queued", "in_progress", "completed", "success", "failure", "cancelled"]


def run_shape(r: dict[str, Any]) -> dict[str, Any]:
    return compact(
        {
            "id": r.get("id"),
            "workflow": one_line(r.get("name"), 100),
            "title": one_line(r.get("display_title"), 200),
            "status": r.get("status"),
            "conclusion": r.get("conclusion"),
            "branch": one_line(r.get("head_branch"), 200),
            "sha": str(r.get("head_sha") or "")[:7] or None,
            "event": r.get("event"),
            "attempt": r.get("run_attempt") if (r.get("run_attempt") or 1) > 1 else None,
            "created": r.get("created_at"),
        }
    )


def actions_toolset(api: GitHubApi) -> Toolset:
    toolset = Toolset("actions", "Workflow runs, jobs and job logs", default=False)

    @toolset.tool(title="List workflow runs", read_only=True, open_world=True)
    def list_workflow_runs(
        repo: RepoName,
        workflow: Annotated[str | None, Field(description="workflow file name (ci.yml) or id")] = None,
        branch: str | None = None,
        status: RunStatus | None = None,
        limit: Annotated[Limit, Field(le=100)] = 20,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to see recent CI runs of a repository, a workflow or a branch, and which failed."""
        base = (
            f"/repos/{repo}/actions/workflows/{segment(workflow)}/runs" if workflow else f"/repos/{repo}/actions/runs"
        )
        page = api.page(
            base,
            params={"branch": branch, "status": status},
            limit=limit,
            cursor=cursor,
            scope=json.dumps([branch, status]),
            key="workflow_runs",
            what=f"workflow runs of {repo}",
        )
        items = [run_shape(r) for r in page.items]
        lines = [
            f"{i['id']} {said(i.get('conclusion') or i.get('status'))} {said(i.get('workflow'))}: {i.get('title', '')}"
            f" ({said(i.get('event'))} on {said(i.get('branch'), 'no branch')} {said(i.get('sha'), 'no commit')},"
            f" {said(i.get('created'))})"
            for i in items
        ]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            fenced_lines(lines, f"workflow runs of {repo}; titles come from commit messages")
        )

    @toolset.tool(title="List workflow jobs", read_only=True, open_world=True)
    def list_workflow_jobs(
        repo: RepoName,
        run_id: Number,
        limit: Annotated[Limit, Field(le=100)] = 30,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to see the jobs of a workflow run and the steps that failed, to pick a job log to read."""
        page = api.page(
            f"/repos/{repo}/actions/runs/{run_id}/jobs",
            params={"filter": "latest"},
            limit=limit,
            cursor=cursor,
            scope="",
            key="jobs",
            what=f"jobs of run {run_id}",
        )
        items = []
        for job in page.items:
            steps = job.get("steps") or []
            failed = [one_line(s.get("name"), 100) for s in steps if s.get("conclusion") == "failure"]
            items.append(
                compact(
                    {
                        "id": job.get("id"),
                        "name": one_line(job.get("name"), 200),
                        "status": job.get("status"),
                        "conclusion": job.get("conclusion"),
                        "failed_steps": failed,
                        "started": job.get("started_at"),
                        "completed": job.get("completed_at"),
                    }
                )
            )
        lines = [
            f"{i['id']} {said(i.get('conclusion') or i.get('status'))} {said(i.get('name'))}"
            + (f"; failed steps: {', '.join(i['failed_steps'])}" if i.get("failed_steps") else "")
            for i in items
        ]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            fenced_lines(lines, f"jobs of run {run_id}")
        )

    @toolset.tool(title="Get job log", read_only=True, open_world=True, budget=LOG_BYTES + 2_000)
    def get_job_log(
        repo: RepoName,
        job_id: Number,
        tail_lines: Annotated[int, Field(ge=1, le=2000)] = 200,
    ) -> str:
        """Use to read the end of a CI job's log, where the error usually is."""
        response = api.request(
            "GET", f"/repos/{repo}/actions/jobs/{job_id}/logs", what=f"log of job {job_id}", follow=False
        )
        location = response.headers.get("location")
        if response.status == 302 and location:
            # A short-lived signed URL on GitHub's storage: no token goes with it. Only the tail is fetched.
            report_progress(1, 2, f"downloading the log of job {job_id}")
            import requests  # here, not at start: see transport.py

            try:
                blob = requests.get(location, headers={"Range": f"bytes=-{LOG_BYTES * 4}"}, timeout=30)
            except requests.RequestException as exc:
                raise Unavailable(f"Could not download the log of job {job_id} ({type(exc).__name__}).") from None
            if blob.status_code >= 400:
                raise Unavailable(f"The log of job {job_id} could not be downloaded (HTTP {blob.status_code}).")
            text = blob.content.decode(errors="replace")
            partial = blob.status_code == 206
        else:
            text = response.text
            partial = False
        text = _TIMESTAMP.sub("", _ANSI.sub("", text))
        lines = text.splitlines()
        if partial and lines:
            lines = lines[1:]  # the first line of a byte range is usually cut mid-way
        tail = lines[-tail_lines:]
        body = "\n".join(tail)
        encoded = body.encode()
        if len(encoded) > LOG_BYTES:
            body = encoded[-LOG_BYTES:].decode(errors="ignore").split("\n", 1)[-1]
        shown = body.count("\n") + 1 if body else 0
        return f"last {shown} lines of the log of job {job_id}\n" + fenced(
            body, f"log of job {job_id}", limit=LOG_BYTES + 100, markup=False, author="the workflow's commands"
        )

    return toolset
