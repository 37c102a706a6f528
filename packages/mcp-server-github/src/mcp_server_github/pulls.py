"""Pull requests: list, read with files, diff in pages, reviews, status checks, create, update, merge, review."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp_server_core import Conflict, Cursor, InvalidArgument, Limit, Toolset
from pydantic import BaseModel, Field

from mcp_server_github.client import GitHubApi, required
from mcp_server_github.diffs import DIFF_PAGE_BYTES, Diff, DiffBytes, diff_page
from mcp_server_github.issues import State, update_given_fields
from mcp_server_github.shapes import (
    COMMENT_CHARS,
    Item,
    Listing,
    NonEmpty,
    Number,
    RepoName,
    clean_text,
    compact,
    day,
    fenced,
    fenced_lines,
    fenced_title_and_body,
    labels_of,
    login_of,
    one_line,
    role_of,
    said,
)


class ReviewComment(BaseModel):
    path: str
    line: Number
    body: str
    side: Literal["LEFT", "RIGHT"] = "RIGHT"


def pr_summary(pr: dict[str, Any]) -> dict[str, Any]:
    return compact(
        {
            "number": pr.get("number"),
            "title": one_line(pr.get("title")),
            "state": "merged" if pr.get("merged_at") else pr.get("state"),
            "draft": pr.get("draft") or None,
            "author": login_of(pr),
            "head": one_line((pr.get("head") or {}).get("label"), 200),
            "base": one_line((pr.get("base") or {}).get("ref"), 200),
            "labels": labels_of(pr),
            "updated": day(pr.get("updated_at")),
        }
    )


def pr_line(s: dict[str, Any]) -> str:
    draft = " draft" if s.get("draft") else ""
    return (
        f"#{s['number']} {said(s.get('state'))}{draft} {s.get('title', '')} ({said(s.get('head'))} ->"
        f" {said(s.get('base'))}) by {s.get('author')}, updated {said(s.get('updated'))}"
    )


def file_shape(f: dict[str, Any]) -> dict[str, Any]:
    return compact(
        {
            "path": one_line(f.get("filename"), 500),
            "status": f.get("status"),
            "additions": f.get("additions"),
            "deletions": f.get("deletions"),
            "previous_path": one_line(f.get("previous_filename"), 500) or None,
        }
    )


def file_line(f: dict[str, Any]) -> str:
    moved = f" (from {f['previous_path']})" if f.get("previous_path") else ""
    return f"{said(f.get('status'))} {f['path']}{moved} +{f.get('additions', 0)} -{f.get('deletions', 0)}"


def pulls_toolset(api: GitHubApi) -> Toolset:
    toolset = Toolset("pull_requests", "Read, review, create, update and merge pull requests", default=False)

    @toolset.tool(title="List pull requests", read_only=True, open_world=True)
    def list_pull_requests(
        repo: RepoName,
        state: State = "open",
        base: str | None = None,
        head: Annotated[str | None, Field(description="owner:branch")] = None,
        limit: Annotated[Limit, Field(le=100)] = 30,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to see a repository's pull requests, recently updated first."""
        page = api.page(
            f"/repos/{repo}/pulls",
            params={"state": state, "base": base, "head": head, "sort": "updated", "direction": "desc"},
            limit=limit,
            cursor=cursor,
            scope=json.dumps([state, base, head]),
            what=f"pull requests of {repo}",
        )
        items = [pr_summary(p) for p in page.items]
        text = fenced_lines([pr_line(i) for i in items], f"pull requests of {repo}; titles written by their authors")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Get pull request", read_only=True, open_world=True)
    def get_pull_request(
        repo: RepoName,
        number: Number,
        limit: Annotated[Limit, Field(le=100, description="Max files")] = 50,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read one pull request: description, branches, mergeability and the files it changes."""
        where = f"{repo}#{number}"
        pr = api.get(f"/repos/{repo}/pulls/{number}", what=f"pull request {where}")
        page = api.page(
            f"/repos/{repo}/pulls/{number}/files", limit=limit, cursor=cursor, scope="", what=f"files of {where}"
        )
        files = [file_shape(f) for f in page.items]
        item = compact(
            {
                **pr_summary(pr),
                "role": role_of(pr),
                "head_sha": (pr.get("head") or {}).get("sha"),
                "mergeable": pr.get("mergeable"),
                "mergeable_state": pr.get("mergeable_state"),
                "commits": pr.get("commits"),
                "additions": pr.get("additions"),
                "deletions": pr.get("deletions"),
                "changed_files": pr.get("changed_files"),
                "reviewers": [u.get("login") for u in pr.get("requested_reviewers") or []],
                "url": pr.get("html_url"),
                "body": clean_text(pr.get("body")),
            }
        )
        head = (
            f"{where} {said(item.get('state'))}{' draft' if item.get('draft') else ''}: {said(item.get('head'))} -> "
            f"{said(item.get('base'))} by {item['author']} ({item['role']}), {item.get('commits', '?')} commits, "
            f"+{item.get('additions', 0)} -{item.get('deletions', 0)} in {item.get('changed_files', '?')} files, "
            f"mergeable: {item.get('mergeable_state', 'unknown')}"
        )
        body = fenced_title_and_body(pr)
        listing = fenced_lines([file_line(f) for f in files], "files changed")
        return Item(item=item, parts=files, next_cursor=page.next_cursor).with_text(f"{head}\n{body}\n{listing}")

    @toolset.tool(title="Get pull request diff", read_only=True, open_world=True, budget=14_000)
    def get_pull_request_diff(
        repo: RepoName,
        number: Number,
        file: Annotated[str | None, Field(description="only this file's changes")] = None,
        limit: DiffBytes = DIFF_PAGE_BYTES,
        cursor: Cursor = None,
    ) -> Diff:
        """Use to read a pull request's changes as a unified diff."""
        text, next_cursor = diff_page(
            api, f"/repos/{repo}/pulls/{number}", f"diff of {repo}#{number}", file, limit, cursor
        )
        return Diff(diff=text, next_cursor=next_cursor)

    @toolset.tool(title="Get pull request reviews", read_only=True, open_world=True)
    def get_pull_request_reviews(
        repo: RepoName,
        number: Number,
        limit: Annotated[Limit, Field(le=100, description="Max line comments")] = 30,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read a pull request's reviews and its comments on lines of code."""
        where = f"{repo}#{number}"
        reviews: list[dict[str, Any]] = []
        if not cursor:
            reviews = api.get(
                f"/repos/{repo}/pulls/{number}/reviews", params={"per_page": 100}, what=where, expect=list
            )
        page = api.page(
            f"/repos/{repo}/pulls/{number}/comments", limit=limit, cursor=cursor, scope="", what=f"comments of {where}"
        )
        shaped = [
            compact(
                {
                    "id": r.get("id"),
                    "author": login_of(r),
                    "role": role_of(r),
                    "state": r.get("state"),
                    "submitted": day(r.get("submitted_at")),
                    "body": clean_text(r.get("body"), COMMENT_CHARS),
                }
            )
            for r in reviews
        ]
        comments = [
            compact(
                {
                    "id": c.get("id"),
                    "author": login_of(c),
                    "role": role_of(c),
                    "path": one_line(c.get("path"), 500),
                    "line": c.get("line") or c.get("original_line"),
                    "in_reply_to": c.get("in_reply_to_id"),
                    "body": clean_text(c.get("body"), COMMENT_CHARS),
                }
            )
            for c in page.items
        ]
        parts = [
            f"{said(r.get('state'))} by {login_of(r)} ({role_of(r)})"
            + (f" on {day(r.get('submitted_at'))}" if r.get("submitted_at") else " (pending)")
            + (
                "\n" + fenced(r.get("body"), f"review {r.get('id')} on {where}", r, limit=COMMENT_CHARS)
                if r.get("body")
                else ""
            )
            for r in reviews
        ]
        parts += [
            fenced(
                c.get("body"),
                f"comment {c.get('id')} on {c.get('path')}"
                f" line {said(c.get('line') or c.get('original_line'), '(outdated)')} of {where}",
                c,
                limit=COMMENT_CHARS,
            )
            for c in page.items
        ]
        return Item(item={"reviews": shaped}, parts=comments, next_cursor=page.next_cursor).with_text(
            "\n".join(parts) or f"{where} has no reviews yet."
        )

    @toolset.tool(title="Get pull request status", read_only=True, open_world=True)
    def get_pull_request_status(repo: RepoName, number: Number) -> Item:
        """Use to see whether a pull request's checks and statuses pass on its head commit."""
        pr = api.get(f"/repos/{repo}/pulls/{number}", what=f"pull request {repo}#{number}")
        sha = (pr.get("head") or {}).get("sha")
        status = api.get(f"/repos/{repo}/commits/{sha}/status", params={"per_page": 100}, what=f"statuses of {sha}")
        checks = api.get(f"/repos/{repo}/commits/{sha}/check-runs", params={"per_page": 100}, what=f"checks of {sha}")
        parts = [
            compact(
                {
                    "name": one_line(s.get("context"), 200),
                    "state": s.get("state"),
                    "description": one_line(s.get("description"), 200),
                }
            )
            for s in status.get("statuses") or []
        ]
        parts += [
            compact(
                {
                    "name": one_line(c.get("name"), 200),
                    "state": c.get("conclusion") or c.get("status"),
                    "url": c.get("html_url"),
                }
            )
            for c in checks.get("check_runs") or []
        ]
        failing = [
            p for p in parts if p.get("state") in ("failure", "error", "timed_out", "cancelled", "action_required")
        ]
        pending = [p for p in parts if p.get("state") in ("pending", "queued", "in_progress", "waiting")]
        overall = "failing" if failing else "pending" if pending else "passing" if parts else "no checks"
        item = {"sha": sha, "overall": overall, "failing": len(failing), "pending": len(pending), "total": len(parts)}
        lines = [
            f"{repo}#{number} at {str(sha)[:7]}: {overall}"
            f" ({len(failing)} failing, {len(pending)} pending, {len(parts)} total)"
        ]
        lines += [
            f"{said(p.get('state'))} {p['name']}" + (f": {p['description']}" if p.get("description") else "")
            for p in parts
        ]
        return Item(item=item, parts=parts).with_text("\n".join(lines))

    @toolset.tool(title="Create pull request", read_only=False, open_world=True)
    def create_pull_request(
        repo: RepoName,
        title: NonEmpty,
        head: Annotated[str, Field(description="branch, or owner:branch from a fork")],
        base: str,
        body: str | None = None,
        draft: bool = False,
    ) -> str:
        """Use to open a pull request from a pushed branch."""
        created = api.request(
            "POST",
            f"/repos/{repo}/pulls",
            body=compact({"title": title, "head": head, "base": base, "body": body, "draft": draft or None}),
            what=f"opening a pull request in {repo}",
        ).data
        number = required(created, "number", what=f"opening a pull request in {repo}", applied=True)
        return f"Opened {repo}#{number}: {said(created.get('html_url'), 'no link given')}"

    @toolset.tool(title="Update pull request", read_only=False, open_world=True, idempotent=True)
    def update_pull_request(
        repo: RepoName,
        number: Number,
        title: str | None = None,
        body: str | None = None,
        state: Literal["open", "closed"] | None = None,
        base: str | None = None,
    ) -> str:
        """Use to edit, close or reopen a pull request; omitted fields stay."""
        fields = {"title": title, "body": body, "state": state, "base": base}
        return update_given_fields(
            api, f"/repos/{repo}/pulls/{number}", f"{repo}#{number}", fields, hint="title, body, state, base"
        )

    @toolset.tool(title="Merge pull request", read_only=False, open_world=True)
    def merge_pull_request(
        repo: RepoName,
        number: Number,
        method: Literal["merge", "squash", "rebase"] = "squash",
        sha: Annotated[str | None, Field(description="merge only if the head is still this commit")] = None,
        commit_title: str | None = None,
        commit_message: str | None = None,
    ) -> str:
        """Use to merge a pull request once it is approved and its checks pass."""
        merged = api.request(
            "PUT",
            f"/repos/{repo}/pulls/{number}/merge",
            body=compact(
                {"merge_method": method, "sha": sha, "commit_title": commit_title, "commit_message": commit_message}
            ),
            what=f"merging {repo}#{number}",
        ).data
        if not (merged or {}).get("merged", True):
            raise Conflict(
                f"GitHub did not merge {repo}#{number}: {said((merged or {}).get('message'), 'no reason given')}.",
                hint="Read the pull request's state and checks, then try again.",
            )
        sha = required(merged, "sha", what=f"merging {repo}#{number}", applied=True)
        return f"Merged {repo}#{number} by {method}: {sha}"

    @toolset.tool(title="Review pull request", read_only=False, open_world=True)
    def review_pull_request(
        repo: RepoName,
        number: Number,
        event: Literal["APPROVE", "REQUEST_CHANGES", "COMMENT"],
        body: str | None = None,
        comments: list[ReviewComment] | None = None,
    ) -> str:
        """Use to approve, request changes or comment on a pull request, optionally on lines."""
        if event != "APPROVE" and not body and not comments:
            raise InvalidArgument(f"A {event} review needs a body or line comments.", hint="Say what to change.")
        review = api.request(
            "POST",
            f"/repos/{repo}/pulls/{number}/reviews",
            body=compact(
                {
                    "event": event,
                    "body": body,
                    "comments": [c.model_dump() for c in comments or []] or None,
                }
            ),
            what=f"reviewing {repo}#{number}",
        ).data
        state = said((review or {}).get("state"), event)
        return f"Submitted {state} review on {repo}#{number}: {said((review or {}).get('html_url'), 'no link given')}"

    return toolset
