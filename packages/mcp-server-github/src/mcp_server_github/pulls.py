"""Pull requests: list, read with files, diff in pages, reviews, status checks, create, update, merge, review."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypedDict

from mcp_server_core import (
    Conflict,
    Cursor,
    InvalidArgument,
    Limit,
    Toolset,
    Untrusted,
    decode_cursor,
    encode_cursor,
)
from pydantic import BaseModel, Field

from mcp_server_github.client import PER_PAGE_MAX, GitHubApi, required
from mcp_server_github.diffs import DIFF_PAGE_BYTES, Diff, DiffBytes, diff_page
from mcp_server_github.issues import State, update_given_fields
from mcp_server_github.lockdown import Lockdown
from mcp_server_github.shapes import (
    COMMENT_CHARS,
    IN_REPO,
    ROOM,
    Item,
    Listing,
    NonEmpty,
    Number,
    RepoName,
    clean_text,
    compact,
    cost,
    day,
    fenced,
    fenced_lines,
    fenced_title_and_body,
    fitting,
    labels_of,
    login_of,
    logins,
    number_of,
    role_of,
    said,
    untrusted,
    weigh,
    withheld_line,
    withheld_of,
)


class ReviewComment(BaseModel):
    path: str
    line: Number
    body: str
    side: Literal["LEFT", "RIGHT"] = "RIGHT"


class PullSummary(TypedDict, total=False):
    number: int
    title: Untrusted
    state: Untrusted
    draft: bool | None
    author: Untrusted
    head: Untrusted
    base: Untrusted
    labels: list[Untrusted]
    updated: str
    withheld: str


class PullDetail(PullSummary, total=False):
    role: str
    head_sha: Untrusted
    mergeable: bool
    mergeable_state: Untrusted
    commits: int
    additions: int
    deletions: int
    changed_files: int
    reviewers: list[Untrusted]
    url: Untrusted
    body: str


class ChangedFile(TypedDict, total=False):
    path: Untrusted
    status: Untrusted
    additions: int
    deletions: int
    previous_path: Untrusted


class Review(TypedDict, total=False):
    id: int
    author: Untrusted
    role: str
    state: Untrusted
    submitted: str
    body: str
    withheld: str


class LineComment(TypedDict, total=False):
    id: int
    author: Untrusted
    role: str
    path: Untrusted
    line: int
    in_reply_to: int | None
    body: str
    withheld: str


class Check(TypedDict, total=False):
    name: Untrusted
    state: Untrusted
    description: Untrusted
    url: Untrusted


_FAILING = frozenset({"failure", "error", "timed_out", "cancelled", "action_required"})
_PENDING = frozenset({"pending", "queued", "in_progress", "waiting"})
_NONE = Untrusted("")


def pr_summary(pr: dict[str, Any]) -> PullSummary:
    return compact(
        PullSummary(
            number=pr.get("number") or 0,
            title=untrusted(pr, "title"),
            state=Untrusted("merged") if pr.get("merged_at") else untrusted(pr, "state"),
            draft=bool(pr.get("draft")) or None,
            author=login_of(pr),
            head=untrusted(pr, "head", "label"),
            base=untrusted(pr, "base", "ref"),
            labels=labels_of(pr),
            updated=day(pr.get("updated_at")) or "",
            withheld=withheld_of(pr),
        )
    )


def pr_line(s: PullSummary) -> str:
    draft = " draft" if s.get("draft") else ""
    title = f"[title withheld by lockdown: {s['withheld']}]" if s.get("withheld") else said(s.get("title"), "")
    return (
        f"#{s.get('number')} {said(s.get('state'))}{draft} {title} ({said(s.get('head'))} ->"
        f" {said(s.get('base'))}) by {s.get('author')}, updated {said(s.get('updated'))}"
    )


def file_shape(f: dict[str, Any]) -> ChangedFile:
    return compact(
        ChangedFile(
            path=untrusted(f, "filename"),
            status=untrusted(f, "status"),
            additions=f.get("additions") or 0,
            deletions=f.get("deletions") or 0,
            previous_path=untrusted(f, "previous_filename"),
        )
    )


def file_line(f: ChangedFile) -> str:
    moved = f" (from {f['previous_path']})" if f.get("previous_path") else ""
    return f"{said(f.get('status'))} {f.get('path')}{moved} +{f.get('additions', 0)} -{f.get('deletions', 0)}"


def review_shape(r: dict[str, Any]) -> Review:
    return compact(
        Review(
            id=r.get("id") or 0,
            author=login_of(r),
            role=role_of(r),
            state=untrusted(r, "state"),
            submitted=day(r.get("submitted_at")) or "",
            body=clean_text(r.get("body"), COMMENT_CHARS),
            withheld=withheld_of(r),
        )
    )


def review_text(r: dict[str, Any], where: str) -> str:
    return (
        f"{said(untrusted(r, 'state'))} by {login_of(r)} ({role_of(r)})"
        + (f" on {day(r.get('submitted_at'))}" if r.get("submitted_at") else " (pending)")
        + (
            "\n"
            + (
                withheld_line(r, f"review {said(r.get('id'))} on {where}")
                or fenced(r.get("body"), f"review {said(r.get('id'))} on {where}", r, limit=COMMENT_CHARS)
            )
            if r.get("body") or withheld_of(r)
            else ""
        )
    )


def review_cost(r: Any, where: str) -> int:
    return cost(review_text(r, where) + "\n", review_shape(r)) if isinstance(r, dict) else 100


def line_comment_shape(c: dict[str, Any]) -> LineComment:
    return compact(
        LineComment(
            id=c.get("id") or 0,
            author=login_of(c),
            role=role_of(c),
            path=untrusted(c, "path"),
            line=c.get("line") or c.get("original_line") or 0,
            in_reply_to=number_of(c.get("in_reply_to_id")) or None,
            body=clean_text(c.get("body"), COMMENT_CHARS),
            withheld=withheld_of(c),
        )
    )


def line_comment_text(c: dict[str, Any], where: str) -> str:
    # The path is someone's file name: in the label only as its one-line form, so it cannot close the label.
    what = (
        f"comment {said(c.get('id'))} on {untrusted(c, 'path')}"
        f" line {said(c.get('line') or c.get('original_line'), '(outdated)')} of {where}"
    )
    return withheld_line(c, what) or fenced(c.get("body"), what, c, limit=COMMENT_CHARS)


def status_shape(s: dict[str, Any]) -> Check:
    return compact(
        Check(name=untrusted(s, "context"), state=untrusted(s, "state"), description=untrusted(s, "description"))
    )


def check_shape(c: dict[str, Any]) -> Check:
    return compact(
        Check(
            name=untrusted(c, "name"),
            state=untrusted(c, "conclusion") or untrusted(c, "status"),
            url=untrusted(c, "html_url"),
        )
    )


def check_line(p: Check) -> str:
    return f"{said(p.get('state'))} {p.get('name')}" + (f": {p['description']}" if p.get("description") else "")


def pulls_toolset(api: GitHubApi, lockdown: Lockdown) -> Toolset:
    toolset = Toolset("pull_requests", "Read, review, create, update and merge pull requests", default=False)

    @toolset.tool(title="List pull requests", read_only=True, open_world=True, reads=IN_REPO)
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
            weight=weigh(pr_summary, pr_line),
            budget=ROOM,
        )
        items = [pr_summary(p) for p in lockdown.scrub_all(page.items, repo)]
        text = fenced_lines([pr_line(i) for i in items], f"pull requests of {repo}; titles written by their authors")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Get pull request", read_only=True, open_world=True, reads=IN_REPO)
    def get_pull_request(
        repo: RepoName,
        number: Number,
        limit: Annotated[Limit, Field(le=100, description="Max files")] = 50,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read one pull request: description, branches, mergeability and the files it changes."""
        where = f"{repo}#{number}"
        pr = lockdown.scrub(api.get(f"/repos/{repo}/pulls/{number}", what=f"pull request {where}"), repo)
        item = compact(
            PullDetail(
                **pr_summary(pr),
                role=role_of(pr),
                head_sha=untrusted(pr, "head", "sha"),
                mergeable=pr.get("mergeable"),  # null while GitHub computes it: left out
                mergeable_state=untrusted(pr, "mergeable_state"),
                commits=pr.get("commits") or 0,
                additions=pr.get("additions") or 0,
                deletions=pr.get("deletions") or 0,
                changed_files=pr.get("changed_files") or 0,
                reviewers=logins(pr.get("requested_reviewers")),
                url=untrusted(pr, "html_url"),
                body=clean_text(pr.get("body")),
            )
        )
        head = (
            f"{where} {said(item.get('state'))}{' draft' if item.get('draft') else ''}: {said(item.get('head'))} -> "
            f"{said(item.get('base'))} by {item.get('author')} ({item.get('role')}), {said(pr.get('commits'), '?')}"
            f" commits, +{item.get('additions', 0)} -{item.get('deletions', 0)} in"
            f" {said(pr.get('changed_files'), '?')} files, mergeable: {said(item.get('mergeable_state'))}"
        )
        opening = f"{head}\n{fenced_title_and_body(pr)}"
        page = api.page(
            f"/repos/{repo}/pulls/{number}/files",
            limit=limit,
            cursor=cursor,
            scope="",
            what=f"files of {where}",
            weight=weigh(file_shape, file_line),
            budget=ROOM - cost(opening, item),
        )
        files = [file_shape(f) for f in page.items]
        listing = fenced_lines([file_line(f) for f in files], "files changed")
        return Item(item=item, parts=files, next_cursor=page.next_cursor).with_text(f"{opening}\n{listing}")

    @toolset.tool(title="Get pull request diff", read_only=True, open_world=True, budget=14_000, reads=IN_REPO)
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

    @toolset.tool(title="Get pull request reviews", read_only=True, open_world=True, reads=IN_REPO)
    def get_pull_request_reviews(
        repo: RepoName,
        number: Number,
        limit: Annotated[Limit, Field(le=100, description="Max line comments")] = 30,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read a pull request's reviews and its comments on lines of code."""
        where = f"{repo}#{number}"
        # Two lists read one after the other, the reviews first: the cursor says which one it pages, and where.
        phase, inner = "reviews", None
        if cursor:
            position = decode_cursor(cursor, scope=where)
            phase, inner = str(position.get("phase")), position.get("inner")
        reviews: list[dict[str, Any]] = []
        comments: list[dict[str, Any]] = []
        next_cursor = None
        left = ROOM
        if phase == "reviews":
            review_page = api.page(
                f"/repos/{repo}/pulls/{number}/reviews",
                limit=PER_PAGE_MAX,
                cursor=inner,
                scope="",
                what=where,
                weight=lambda r: review_cost(r, where),
                budget=ROOM // 2,
            )
            reviews = lockdown.scrub_all(review_page.items, repo)
            left -= sum(review_cost(r, where) for r in reviews)
            if review_page.next_cursor:
                next_cursor = encode_cursor({"phase": "reviews", "inner": review_page.next_cursor}, scope=where)
            phase, inner = "comments", None
        if next_cursor is None and phase == "comments":
            page = api.page(
                f"/repos/{repo}/pulls/{number}/comments",
                limit=limit,
                cursor=inner,
                scope="",
                what=f"comments of {where}",
                weight=lambda c: cost(line_comment_text(c, where) + "\n", line_comment_shape(c)),
                budget=left,
            )
            comments = lockdown.scrub_all(page.items, repo)
            if page.next_cursor:
                next_cursor = encode_cursor({"phase": "comments", "inner": page.next_cursor}, scope=where)
        parts = [review_text(r, where) for r in reviews] + [line_comment_text(c, where) for c in comments]
        return Item(
            item={"reviews": [review_shape(r) for r in reviews]},
            parts=[line_comment_shape(c) for c in comments],
            next_cursor=next_cursor,
        ).with_text("\n".join(parts) or f"{where} has no reviews yet.")

    @toolset.tool(title="Get pull request status", read_only=True, open_world=True, reads=IN_REPO)
    def get_pull_request_status(repo: RepoName, number: Number) -> Item:
        """Use to see whether a pull request's checks and statuses pass on its head commit."""
        pr = api.get(f"/repos/{repo}/pulls/{number}", what=f"pull request {repo}#{number}")
        sha = untrusted(pr, "head", "sha")
        status = api.get(f"/repos/{repo}/commits/{sha.raw}/status", params={"per_page": 100}, what=f"statuses of {sha}")
        checks = api.get(
            f"/repos/{repo}/commits/{sha.raw}/check-runs", params={"per_page": 100}, what=f"checks of {sha}"
        )
        parts = [status_shape(s) for s in status.get("statuses") or []]
        parts += [check_shape(c) for c in checks.get("check_runs") or []]
        failing = [p for p in parts if p.get("state", _NONE).raw in _FAILING]
        pending = [p for p in parts if p.get("state", _NONE).raw in _PENDING]
        overall = "failing" if failing else "pending" if pending else "passing" if parts else "no checks"
        item = {"sha": sha, "overall": overall, "failing": len(failing), "pending": len(pending), "total": len(parts)}
        lines = [
            f"{repo}#{number} at {Untrusted(sha.raw[:7])}: {overall}"
            f" ({len(failing)} failing, {len(pending)} pending, {len(parts)} total)"
        ]
        # The failing ones first: when there are more than fit, those are the ones to see.
        ordered = failing + pending + [p for p in parts if p not in failing and p not in pending]
        shown = fitting((cost(check_line(p) + "\n", p) for p in ordered), ROOM - cost(lines[0], item))
        lines += [check_line(p) for p in ordered[:shown]]
        if shown < len(ordered):
            lines.append(f"({len(ordered) - shown} more checks not shown; the counts above include them)")
        return Item(item=item, parts=ordered[:shown]).with_text("\n".join(lines))

    @toolset.tool(title="Create pull request", read_only=False, open_world=True, writes=IN_REPO)
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
        return f"Opened {repo}#{said(number)}: {said(created.get('html_url'), 'no link given')}"

    @toolset.tool(title="Update pull request", read_only=False, open_world=True, idempotent=True, writes=IN_REPO)
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

    @toolset.tool(title="Merge pull request", read_only=False, open_world=True, writes=IN_REPO)
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
        return f"Merged {repo}#{number} by {method}: {said(sha)}"

    @toolset.tool(title="Review pull request", read_only=False, open_world=True, writes=IN_REPO)
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
