"""Actions: workflow runs, their jobs and steps, and the tail of a job's log."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypedDict

from mcp_server_core import Cursor, Limit, Toolset, Unavailable, Untrusted, report_progress
from mcp_server_core.conventions.budget import json_size
from pydantic import Field

from mcp_server_github.client import GitHubApi
from mcp_server_github.lockdown import FROM_ELSEWHERE, Lockdown
from mcp_server_github.repos import segment
from mcp_server_github.shapes import (
    IN_REPO,
    ROOM,
    Listing,
    Number,
    RepoName,
    compact,
    fenced,
    fenced_lines,
    names,
    number_of,
    said,
    untrusted,
    weigh,
    withheld_of,
)

LOG_BYTES = 12_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ", re.MULTILINE)
RunStatus = Literal["queued", "in_progress", "completed", "success", "failure", "cancelled"]


class Run(TypedDict, total=False):
    id: int
    workflow: Untrusted
    title: Untrusted
    status: Untrusted
    conclusion: Untrusted
    branch: Untrusted
    sha: Untrusted
    event: Untrusted
    attempt: int | None
    created: Untrusted
    withheld: str


class Job(TypedDict, total=False):
    id: int
    name: Untrusted
    status: Untrusted
    conclusion: Untrusted
    failed_steps: list[Untrusted]
    started: Untrusted
    completed: Untrusted
    withheld: str


def run_shape(r: dict[str, Any]) -> Run:
    attempt = number_of(r.get("run_attempt"))
    return compact(
        Run(
            id=number_of(r.get("id")),
            workflow=untrusted(r, "name"),
            title=untrusted(r, "display_title"),
            status=untrusted(r, "status"),
            conclusion=untrusted(r, "conclusion"),
            branch=untrusted(r, "head_branch"),
            sha=Untrusted(untrusted(r, "head_sha").raw[:7]),
            event=untrusted(r, "event"),
            attempt=attempt if attempt > 1 else None,
            created=untrusted(r, "created_at"),
            withheld=withheld_of(r),
        )
    )


def run_line(i: Run) -> str:
    title = f"[title withheld by lockdown: {i['withheld']}]" if i.get("withheld") else said(i.get("title"), "")
    return (
        f"{i.get('id')} {said(i.get('conclusion') or i.get('status'))} {said(i.get('workflow'))}:"
        f" {title} ({said(i.get('event'))} on {said(i.get('branch'), 'no branch')}"
        f" {said(i.get('sha'), 'no commit')}, {said(i.get('created'))})"
    )


def job_shape(job: dict[str, Any]) -> Job:
    steps = [s for s in job.get("steps") or [] if isinstance(s, dict)]
    return compact(
        Job(
            id=number_of(job.get("id")),
            name=untrusted(job, "name"),
            status=untrusted(job, "status"),
            conclusion=untrusted(job, "conclusion"),
            failed_steps=[untrusted(s, "name") for s in steps if s.get("conclusion") == "failure"],
            started=untrusted(job, "started_at"),
            completed=untrusted(job, "completed_at"),
        )
    )


def job_withheld(job: Job) -> Job:
    """A job of a run whose workflow file a stranger wrote (lockdown): its name and its steps' names are theirs."""
    return compact(Job(**{**job, "name": Untrusted(None), "failed_steps": [], "withheld": FROM_ELSEWHERE}))


def job_line(i: Job) -> str:
    if i.get("withheld"):
        return (
            f"{i.get('id')} {said(i.get('conclusion') or i.get('status'))} [name withheld by lockdown: {i['withheld']}]"
        )
    return f"{i.get('id')} {said(i.get('conclusion') or i.get('status'))} {said(i.get('name'))}" + (
        f"; failed steps: {names(i['failed_steps'])}" if i.get("failed_steps") else ""
    )


def log_withheld(repo: str, job_id: int) -> str:
    return (
        f"The log of job {job_id} in {repo} is withheld by lockdown: its workflow run is of a pull request from"
        f" another repository, so the commands it ran (and what they printed) were written by {FROM_ELSEWHERE},"
        " whom no owner, member or collaborator vouches for. To read it, open the run's page on GitHub, or ask"
        " whoever runs this server to start it without --lockdown."
    )


def actions_toolset(api: GitHubApi, lockdown: Lockdown) -> Toolset:
    toolset = Toolset("actions", "Workflow runs, jobs and job logs", default=False)

    @toolset.tool(title="List workflow runs", read_only=True, open_world=True, reads=IN_REPO)
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
            weight=weigh(run_shape, run_line),
            budget=ROOM,
        )
        items = [run_shape(lockdown.scrub_run(r, repo)) for r in page.items]
        lines = [run_line(i) for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            fenced_lines(lines, f"workflow runs of {repo}; titles come from commit messages")
        )

    @toolset.tool(title="List workflow jobs", read_only=True, open_world=True, reads=IN_REPO)
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
            weight=weigh(job_shape, job_line),
            budget=ROOM,
        )
        items = [job_shape(j) for j in page.items]
        if items and lockdown.run_withheld(repo, run_id):  # one request per run, kept
            items = [job_withheld(i) for i in items]
        lines = [job_line(i) for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            fenced_lines(lines, f"jobs of run {run_id}")
        )

    @toolset.tool(title="Get job log", read_only=True, open_world=True, budget=LOG_BYTES + 2_000, reads=IN_REPO)
    def get_job_log(
        repo: RepoName,
        job_id: Number,
        tail_lines: Annotated[int, Field(ge=1, le=2000)] = 200,
    ) -> str:
        """Use to read the end of a CI job's log, where the error usually is."""
        if lockdown.job_withheld(repo, job_id):
            return log_withheld(repo, job_id)
        response = api.request(
            "GET", f"/repos/{repo}/actions/jobs/{job_id}/logs", what=f"log of job {job_id}", follow=False
        )
        location = response.headers.get("location")
        if response.status == 302 and location:
            # A short-lived signed URL on GitHub's storage: no token goes with it. Only the tail is fetched.
            report_progress(1, 2, f"downloading the log of job {job_id}")
            import requests  # here, not at start: see transport.py

            try:
                with requests.get(
                    location, headers={"Range": f"bytes=-{LOG_BYTES * 4}"}, timeout=30, stream=True
                ) as blob:
                    if blob.status_code >= 400:
                        raise Unavailable(f"The log of job {job_id} could not be downloaded (HTTP {blob.status_code}).")
                    # Storage that ignores the Range sends the whole log: only its tail is kept while it streams.
                    kept = bytearray()
                    for chunk in blob.iter_content(64 * 1024):
                        kept += chunk
                        del kept[: max(len(kept) - LOG_BYTES * 4, 0)]
                    partial = blob.status_code == 206 or len(kept) == LOG_BYTES * 4
            except requests.RequestException as exc:
                raise Unavailable(f"Could not download the log of job {job_id} ({type(exc).__name__}).") from None
            text = kept.decode(errors="replace")
        else:
            text = response.text
            partial = False
        text = _TIMESTAMP.sub("", _ANSI.sub("", text))
        lines = text.splitlines()
        if partial and lines:
            lines = lines[1:]  # the first line of a byte range is usually cut mid-way
        tail = lines[-tail_lines:]
        body = "\n".join(tail)
        while json_size(body) > LOG_BYTES:  # as the wire counts it: quotes and controls cost more than a byte
            body = body[len(body) - len(body) * LOG_BYTES // json_size(body) + 1 :].split("\n", 1)[-1]
        shown = body.count("\n") + 1 if body else 0
        return f"last {shown} lines of the log of job {job_id}\n" + fenced(
            body, f"log of job {job_id}", limit=LOG_BYTES + 100, markup=False, author="the workflow's commands"
        )

    return toolset
