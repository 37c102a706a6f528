"""Issues: list, read with comments, search, create, update, comment, labels."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from mcp_server_core import Cursor, InvalidArgument, Limit, Toolset, Untrusted
from pydantic import Field

from mcp_server_github.client import GitHubApi, required
from mcp_server_github.lockdown import Lockdown
from mcp_server_github.search import search_page
from mcp_server_github.shapes import (
    COMMENT_CHARS,
    IN_REPO,
    ROOM,
    SEARCHED,
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
    labels_of,
    login_of,
    logins,
    names,
    role_of,
    said,
    split_repo,
    untrusted,
    weigh,
    withheld_line,
    withheld_of,
)

State = Literal["open", "closed", "all"]


class IssueSummary(TypedDict, total=False):
    repo: Untrusted
    number: int
    title: Untrusted
    state: Untrusted
    kind: str
    author: Untrusted
    labels: list[Untrusted]
    comments: int
    updated: str
    withheld: str


class Comment(TypedDict, total=False):
    id: int
    author: Untrusted
    role: str
    created: str
    body: str
    withheld: str


def issue_summary(issue: dict[str, Any]) -> IssueSummary:
    return compact(
        IssueSummary(
            number=issue.get("number") or 0,
            title=untrusted(issue, "title"),
            state=untrusted(issue, "state"),
            kind="pr" if issue.get("pull_request") else "",
            author=login_of(issue),
            labels=labels_of(issue),
            comments=issue.get("comments") or 0,
            updated=day(issue.get("updated_at")) or "",
            withheld=withheld_of(issue),
        )
    )


def issue_line(summary: IssueSummary) -> str:
    kind = " PR" if summary.get("kind") == "pr" else ""
    labels = f" [{names(summary['labels'])}]" if summary.get("labels") else ""
    repo = f"{summary['repo']}" if "repo" in summary else ""
    title = (
        f"[title withheld by lockdown: {summary['withheld']}]"
        if summary.get("withheld")
        else said(summary.get("title"), "")
    )
    return (
        f"{repo}#{summary.get('number')}{kind} {said(summary.get('state'))} {title}{labels}"
        f" by {summary.get('author')}, {summary.get('comments', 0)} comments, updated {said(summary.get('updated'))}"
    )


def comment_shape(comment: dict[str, Any]) -> Comment:
    return compact(
        Comment(
            id=comment.get("id") or 0,
            author=login_of(comment),
            role=role_of(comment),
            created=str(comment.get("created_at") or ""),
            body=clean_text(comment.get("body"), COMMENT_CHARS),
            withheld=withheld_of(comment),
        )
    )


def render_comment(comment: dict[str, Any]) -> str:
    # The answer's first line names the issue, and no tool takes a comment's id (it stays in the structured
    # content): the label keeps only what tells one comment from another, its date and author.
    what = f"comment of {said(day(comment.get('created_at')))}"
    return withheld_line(comment, what) or fenced(comment.get("body"), what, comment, limit=COMMENT_CHARS)


class IssueDetail(IssueSummary, total=False):
    role: str
    assignees: list[Untrusted]
    milestone: Untrusted
    state_reason: Untrusted
    created: str
    closed: str
    url: Untrusted
    body: str


class Label(TypedDict, total=False):
    name: Untrusted
    description: Untrusted


def label_shape(label: dict[str, Any]) -> Label:
    return compact(Label(name=untrusted(label, "name"), description=untrusted(label, "description")))


def label_line(label: Label) -> str:
    return f"{label.get('name')}" + (f": {label['description']}" if label.get("description") else "")


def hit_repo(issue: Mapping[str, Any]) -> str:
    """The repository of an issue a search found, named by GitHub's `repository_url`."""
    return str(issue.get("repository_url", "")).split("/repos/")[-1]


def hit_summary(issue: dict[str, Any]) -> IssueSummary:
    """An issue found by a search, with its repository."""
    return IssueSummary(repo=Untrusted(hit_repo(issue)), **issue_summary(issue))


def comment_cost(comment: Any) -> int:
    return cost(render_comment(comment) + "\n", comment_shape(comment)) if isinstance(comment, dict) else 100


def update_given_fields(api: GitHubApi, path: str, where: str, fields: dict[str, Any], *, hint: str) -> str:
    """PATCHes only the fields given: GitHub keeps what a PATCH leaves out, so an omitted field stays as it is."""
    changes = {k: v for k, v in fields.items() if v is not None}
    if not changes:
        raise InvalidArgument("Nothing to change.", hint=f"Pass at least one of {hint}.")
    updated = api.request("PATCH", path, body=changes, what=f"updating {where}").data
    state = said(required(updated, "state", what=f"updating {where}", applied=True))
    return f"Updated {where} ({', '.join(changes)}); it is {state}: {said(updated.get('html_url'), 'no link given')}"


def issues_toolset(api: GitHubApi, lockdown: Lockdown) -> Toolset:
    toolset = Toolset("issues", "Read, search, create and update issues and their comments")

    @toolset.tool(title="List issues", read_only=True, open_world=True, reads=IN_REPO)
    def list_issues(
        repo: RepoName,
        state: State = "open",
        labels: list[str] | None = None,
        assignee: str | None = None,
        sort: Literal["created", "updated", "comments"] = "updated",
        limit: Annotated[Limit, Field(le=100)] = 30,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to see a repository's issues (pull requests among them are marked)."""
        scope = json.dumps([state, labels, assignee, sort])
        page = api.page(
            f"/repos/{repo}/issues",
            params={"state": state, "labels": labels, "assignee": assignee, "sort": sort},
            limit=limit,
            cursor=cursor,
            scope=scope,
            what=f"issues of {repo}",
            weight=weigh(issue_summary, issue_line),
            budget=ROOM,
        )
        items = [issue_summary(i) for i in lockdown.scrub_all(page.items, repo)]
        text = fenced_lines([issue_line(i) for i in items], f"issues of {repo}; titles written by their authors")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Get issue", read_only=True, open_world=True, reads=IN_REPO)
    def get_issue(
        repo: RepoName,
        number: Number,
        limit: Annotated[Limit, Field(le=100, description="Max comments")] = 30,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read one issue or pull request conversation with its comments."""
        where = f"{repo}#{number}"
        issue = lockdown.scrub(api.get(f"/repos/{repo}/issues/{number}", what=f"issue {where}"), repo)
        summary = issue_summary(issue)
        item = IssueDetail(
            **summary,
            role=role_of(issue),
            assignees=logins(issue.get("assignees")),
            milestone=untrusted(issue, "milestone", "title"),
            state_reason=untrusted(issue, "state_reason"),
            created=str(issue.get("created_at") or ""),
            closed=str(issue.get("closed_at") or ""),
            url=untrusted(issue, "html_url"),
            body=clean_text(issue.get("body")),
        )
        item = compact(item)
        head = (
            f"{where} {said(item.get('state'))}"
            + (f" ({item['state_reason']})" if item.get("state_reason") else "")
            + f", opened by {item.get('author')} ({item.get('role')}) on {said(day(item.get('created')))}"
            + (f", labels: {names(item['labels'])}" if item.get("labels") else "")
            + (f", assignees: {names(item['assignees'])}" if item.get("assignees") else "")
            + f", {said(issue.get('comments'), '0')} comments"
        )
        opening = f"{head}\n{fenced_title_and_body(issue)}"
        comments: list[dict[str, Any]] = []
        next_cursor = None
        if issue.get("comments"):
            page = api.page(
                f"/repos/{repo}/issues/{number}/comments",
                limit=limit,
                cursor=cursor,
                scope="",
                what=f"comments of {where}",
                weight=comment_cost,
                budget=ROOM - cost(opening, item),
            )
            comments, next_cursor = lockdown.scrub_all(page.items, repo), page.next_cursor
        parts = [opening, *(render_comment(c) for c in comments)]
        return Item(item=item, parts=[comment_shape(c) for c in comments] or None, next_cursor=next_cursor).with_text(
            "\n".join(parts)
        )

    @toolset.tool(title="Search issues", read_only=True, open_world=True, reads=SEARCHED)
    def search_issues(
        query: Annotated[str, Field(description="GitHub search syntax, e.g. 'repo:o/r is:open label:bug crash'")],
        limit: Annotated[Limit, Field(le=100)] = 30,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to find issues, or pull requests with is:pr, across repositories."""
        if not any(q in query for q in ("is:issue", "is:pr", "is:pull-request", "type:issue", "type:pr")):
            query = f"{query} is:issue"
        query = api.allow.scope_search(query)
        page = search_page(
            api, "issues", query, limit=limit, cursor=cursor, what="search", weight=weigh(hit_summary, issue_line)
        )
        items = []
        for issue in page.items:
            summary = hit_summary(lockdown.scrub(issue, hit_repo(issue)))
            if api.allow.allows(*split_repo(summary["repo"].raw)):  # narrowed; this holds even if GitHub widened it
                items.append(summary)
        lines = [issue_line(i) for i in items]
        if api.allow:
            # GitHub's total_count counts whatever the token can see: with an allow-list, only what is shown.
            more = "; more with next_cursor" if page.next_cursor else ""
            count = f"{len(items)} shown for '{Untrusted(query)}'{more}"
        else:
            total = page.data.get("total_count", len(items)) if isinstance(page.data, dict) else len(items)
            count = f"{said(total)} results for '{Untrusted(query)}'"
        text = f"{count}\n" + fenced_lines(lines, "search results; titles written by others")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Create issue", read_only=False, open_world=True, writes=IN_REPO)
    def create_issue(
        repo: RepoName,
        title: Annotated[NonEmpty, Field(max_length=256)],
        body: str | None = None,
        labels: list[str] | None = None,
        assignees: list[str] | None = None,
    ) -> str:
        """Use to open a new issue."""
        created = api.request(
            "POST",
            f"/repos/{repo}/issues",
            body=compact({"title": title, "body": body, "labels": labels, "assignees": assignees}),
            what=f"creating an issue in {repo}",
        ).data
        number = required(created, "number", what=f"creating an issue in {repo}", applied=True)
        return f"Created {repo}#{said(number)}: {said(created.get('html_url'), 'no link given')}"

    @toolset.tool(title="Update issue", read_only=False, open_world=True, idempotent=True, writes=IN_REPO)
    def update_issue(
        repo: RepoName,
        number: Number,
        title: str | None = None,
        body: str | None = None,
        state: Literal["open", "closed"] | None = None,
        state_reason: Literal["completed", "not_planned", "reopened"] | None = None,
        labels: Annotated[list[str] | None, Field(description="replaces all")] = None,
        assignees: Annotated[list[str] | None, Field(description="replaces all")] = None,
    ) -> str:
        """Use to edit, close or reopen an issue; omitted fields stay."""
        fields = {
            "title": title,
            "body": body,
            "state": state,
            "state_reason": state_reason,
            "labels": labels,
            "assignees": assignees,
        }
        return update_given_fields(
            api, f"/repos/{repo}/issues/{number}", f"{repo}#{number}", fields, hint="title, body, state, labels"
        )

    @toolset.tool(title="Comment on issue", read_only=False, open_world=True, writes=IN_REPO)
    def add_issue_comment(repo: RepoName, number: Number, body: NonEmpty) -> str:
        """Use to comment on an issue or pull request's conversation."""
        created = api.request(
            "POST",
            f"/repos/{repo}/issues/{number}/comments",
            body={"body": body},
            what=f"commenting on {repo}#{number}",
        ).data
        return f"Commented on {repo}#{number}: {said((created or {}).get('html_url'), 'no link given')}"

    @toolset.tool(title="List labels", read_only=True, open_world=True, reads=IN_REPO)
    def list_labels(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 100, cursor: Cursor = None) -> Listing:
        """Use to see which labels a repository has before labelling an issue."""
        page = api.page(
            f"/repos/{repo}/labels",
            limit=limit,
            cursor=cursor,
            scope="",
            what=f"labels of {repo}",
            weight=weigh(label_shape, label_line),
            budget=ROOM,
        )
        items = [label_shape(lab) for lab in page.items]
        lines = [label_line(i) for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(fenced_lines(lines, f"labels of {repo}"))

    return toolset
