"""Repositories: file contents, tree, branches, tags, commits, compare, releases; file writes, push, branch, fork."""

from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict
from urllib.parse import quote

from mcp_server_core import (
    Conflict,
    Cursor,
    InvalidArgument,
    Limit,
    Rendered,
    Toolset,
    Untrusted,
    decode_cursor,
    encode_cursor,
    report_progress,
)
from mcp_server_core.conventions.budget import json_size
from mcp_server_core.conventions.untrusted import clean
from pydantic import BaseModel, Field, PrivateAttr

from mcp_server_github.client import GitHubApi, required
from mcp_server_github.diffs import DIFF_PAGE_BYTES, Diff, DiffBytes, diff_page
from mcp_server_github.pulls import file_line, file_shape
from mcp_server_github.shapes import (
    BODY_CHARS,
    IN_REPO,
    ROOM,
    Item,
    Listing,
    NonEmpty,
    Number,
    RepoName,
    Shapes,
    compact,
    cost,
    day,
    fenced,
    fenced_lines,
    fitting,
    git_name,
    login_of,
    number_of,
    room_for,
    said,
    split_repo,
    untrusted,
    weigh,
)

FILE_BYTES = 14_000
RAW_MEDIA = "application/vnd.github.raw"
_SHA = re.compile(r"^[0-9a-f]{40}$")
Ref = str | None  # a branch, tag or commit; GitHub takes the default branch without one


class FileContent(Rendered):
    path: Untrusted
    sha: Untrusted | None = None
    size: int | None = None
    content: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    total_lines: int | None = None
    next_start_line: int | None = None
    entries: Shapes | None = None
    _text: str = PrivateAttr("")

    def render(self) -> str:
        return self._text


class FileChange(BaseModel):
    path: NonEmpty
    content: str


def file_path(path: str) -> str:
    """A repository path quoted for a URL; '.' and '..' segments are refused by the API door as well."""
    return quote(path.strip("/"), safe="/")


def segment(value: str) -> str:
    return quote(value, safe="")


class CommitSummary(TypedDict, total=False):
    sha: Untrusted
    author: Untrusted
    git_author: Untrusted
    date: Untrusted
    message: Untrusted


class CommitDetail(CommitSummary, total=False):
    parents: list[Untrusted]
    additions: int
    deletions: int
    url: Untrusted


class Entry(TypedDict, total=False):
    name: Untrusted
    path: Untrusted
    type: Untrusted
    size: int | None


class GitRef(TypedDict, total=False):
    name: Untrusted
    sha: Untrusted
    protected: bool | None


class Release(TypedDict, total=False):
    tag: Untrusted
    name: Untrusted
    draft: bool | None
    prerelease: bool | None
    published: str
    author: Untrusted
    url: Untrusted


def commit_summary(c: dict[str, Any]) -> CommitSummary:
    # A GitHub account when GitHub matched the commit to one; otherwise only the name git recorded, which anyone
    # can set to anything, kept apart so that it is never shown as an account.
    account = login_of(c, "author") if isinstance(c.get("author"), dict) else None
    return compact(
        CommitSummary(
            sha=untrusted(c, "sha"),
            author=account or Untrusted(""),
            git_author=Untrusted("") if account else untrusted(c, "commit", "author", "name"),
            date=untrusted(c, "commit", "author", "date"),
            message=Untrusted(str(untrusted(c, "commit", "message").raw).split("\n", 1)[0]),
        )
    )


def author_of(summary: CommitSummary) -> str:
    """Who wrote a commit, for the text: the GitHub account, or the git name quoted as only a name, or "unknown"
    when GitHub sends neither (a commit imported without an author: null, never shown as "None")."""
    if summary.get("author"):
        return f"{summary['author']}"
    if summary.get("git_author"):
        return git_name(summary["git_author"])
    return "unknown"


def commit_line(summary: CommitSummary) -> str:
    date = said(day(summary.get("date", Untrusted("")).raw), "undated")
    return (
        f"{Untrusted(summary.get('sha', Untrusted('')).raw[:7])} {date} {author_of(summary)}: {summary.get('message')}"
    )


def entry_shape(e: dict[str, Any], key: str = "path") -> Entry:
    """A tree entry by its `path`, or a directory listing's entry by its `name`."""
    shaped = Entry(type=untrusted(e, "type"), size=number_of(e.get("size")) or None)
    shaped["path" if key == "path" else "name"] = untrusted(e, key)
    return compact(shaped)


def tree_line(e: Entry) -> str:
    return f"{e.get('path')}{'/' if e.get('type', _NONE).raw == 'tree' else ''}"


def dir_line(e: Entry) -> str:
    return f"{e.get('type')} {e.get('name')}" + (f" ({e['size']} bytes)" if e.get("size") else "")


def ref_shape(b: dict[str, Any]) -> GitRef:
    return compact(
        GitRef(name=untrusted(b, "name"), sha=untrusted(b, "commit", "sha"), protected=bool(b.get("protected")) or None)
    )


def ref_line(r: GitRef) -> str:
    sha = Untrusted(r.get("sha", _NONE).raw[:7])
    return f"{r.get('name')} {sha}{' protected' if r.get('protected') else ''}"


def release_shape(r: dict[str, Any]) -> Release:
    return compact(
        Release(
            tag=untrusted(r, "tag_name"),
            name=untrusted(r, "name"),
            draft=bool(r.get("draft")) or None,
            prerelease=bool(r.get("prerelease")) or None,
            published=day(r.get("published_at")) or "",
            author=login_of(r, "author"),
            url=untrusted(r, "html_url"),
        )
    )


def release_text(r: dict[str, Any]) -> str:
    i = release_shape(r)
    # The tag is someone's name for it: its one-line form heads the entry and names the fence.
    return (
        f"{i.get('tag')} {said(i.get('published'), 'unpublished')}"
        f"{' prerelease' if i.get('prerelease') else ''}{' draft' if i.get('draft') else ''}\n"
        + fenced(
            f"{r.get('name') or ''}\n\n{r.get('body') or ''}",
            f"notes of release {i.get('tag')}",
            author=i.get("author"),
            limit=1_500,
        )
    )


def release_cost(r: Any) -> int:
    return cost(release_text(r) + "\n", release_shape(r)) if isinstance(r, dict) else 100


_NONE = Untrusted("")


def repos_toolset(api: GitHubApi) -> Toolset:
    toolset = Toolset(
        "repos",
        "Files, tree, branches, tags, commits, compare, releases; write files, push, branch, fork",
        default=False,
    )

    @toolset.tool(title="Get file contents", read_only=True, open_world=True, budget=FILE_BYTES + 2_000, reads=IN_REPO)
    def get_file_contents(
        repo: RepoName,
        path: Annotated[str, Field(description="file or directory")] = "",
        ref: Ref = None,
        start_line: Number = 1,
        end_line: Number | None = None,
    ) -> FileContent:
        """Use to read a file (by line range) or list a directory in a repository."""
        where = f"{repo}:{Untrusted(path or '/')}" + (f"@{Untrusted(ref)}" if ref else "")
        url = f"/repos/{repo}/contents/{file_path(path)}".rstrip("/")
        data = api.get(url, params={"ref": ref}, what=where, expect=(dict, list))
        if isinstance(data, list):
            return _directory(data, path, where, repo)
        if not isinstance(data, dict) or data.get("type") != "file":
            kind = untrusted(data, "type") if isinstance(data, dict) else None
            raise InvalidArgument(
                f"{where} is a {kind}, not a file." if kind else f"GitHub's answer for {where} holds no file.",
                hint="List the directory (path of its parent) to see what is there.",
            )
        raw = _decode(data)
        if raw is not None:
            window = _window([raw], start_line, end_line, FILE_BYTES)
            if window.total is None:  # held already (under 1 MB): its line count costs one pass in C
                window.total = raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0)
        else:
            # Over 1 MB the contents API leaves the content out: the raw file is read as a stream, only as far as
            # the lines shown, and never held whole (a 50 MiB one-line file costs 14 KB here, not 50 MiB).
            with api.stream(url, params={"ref": ref}, accept=RAW_MEDIA, what=where) as chunks:
                window = _window(chunks, start_line, end_line, FILE_BYTES)
        sha = untrusted(data, "sha")
        size = data.get("size") if isinstance(data.get("size"), int) else None
        if window.binary:
            result = FileContent(path=Untrusted(path), sha=sha, size=size)
            result._text = (
                f"{where} is a binary file of {said(f'{size:,}' if size is not None else None)} bytes; not shown."
            )
            return result
        if not window.lines and window.total is not None and start_line > max(window.total, 1):
            raise InvalidArgument(f"{where} has {window.total} lines; start_line {start_line} is past the end.")
        shown_end = start_line + max(len(window.lines), 1) - 1
        content = "".join(window.lines)
        result = FileContent(
            path=Untrusted(path),
            sha=sha,
            size=size,
            content=clean(content, markup=False).text,
            start_line=start_line,
            end_line=shown_end,
            total_lines=window.total,
            next_start_line=shown_end + 1 if window.more else None,
        )
        of = f"{window.total}" if window.total is not None else f"more than {shown_end}"
        head = f"{where} lines {start_line}-{shown_end} of {of} (sha {Untrusted(sha.raw[:7])})"
        if window.cut:
            shown_bytes = len(window.lines[-1].encode())
            head += f"; line {shown_end} is longer than this answer: its first {shown_bytes:,} bytes"
        tail = f"\n[more: start_line={shown_end + 1}]" if window.more else ""
        result._text = (
            head
            + "\n"
            + fenced(content, f"file {where}", limit=FILE_BYTES * 2, markup=False, author="its committers")
            + tail
        )
        return result

    @toolset.tool(title="Get repository tree", read_only=True, open_world=True, reads=IN_REPO)
    def get_repository_tree(
        repo: RepoName,
        ref: Ref = None,
        path: Annotated[str | None, Field(description="only entries under this directory")] = None,
        limit: Annotated[Limit, Field(le=1000)] = 300,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to see every file path of a repository (or under one directory) in one call."""
        scope = json.dumps([repo, ref, path, limit])
        start = int(decode_cursor(cursor, scope=scope)["offset"]) if cursor else 0
        tree = api.get(
            f"/repos/{repo}/git/trees/{segment(ref or 'HEAD')}", params={"recursive": 1}, what=f"tree of {repo}"
        )
        prefix = path.strip("/") + "/" if path and path.strip("/") else ""
        entries = [
            entry_shape(e)
            for e in tree.get("tree") or []
            if isinstance(e, dict) and str(e.get("path", "")).startswith(prefix)
        ]
        head = f"{len(entries)} entries under {Untrusted(prefix or '/')}"
        chosen = entries[start : start + limit]
        taken = fitting((cost(tree_line(e) + "\n", e) for e in chosen), ROOM - cost(head))
        page = chosen[:taken]
        end = start + taken
        note = "\n[GitHub truncated this tree; list a subdirectory with path]" if tree.get("truncated") else ""
        text = f"{head}\n" + fenced_lines([tree_line(e) for e in page], f"paths in {repo}") + note
        return Listing(
            items=page, next_cursor=encode_cursor({"offset": end}, scope=scope) if end < len(entries) else None
        ).with_text(text)

    @toolset.tool(title="List branches", read_only=True, open_world=True, reads=IN_REPO)
    def list_branches(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 100, cursor: Cursor = None) -> Listing:
        """Use to see a repository's branches and the commit each points at."""
        page = api.page(
            f"/repos/{repo}/branches",
            limit=limit,
            cursor=cursor,
            scope="",
            what=f"branches of {repo}",
            weight=weigh(ref_shape, ref_line),
            budget=ROOM,
        )
        items = [ref_shape(b) for b in page.items]
        lines = [ref_line(i) for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(fenced_lines(lines, f"branches of {repo}"))

    @toolset.tool(title="List tags", read_only=True, open_world=True, reads=IN_REPO)
    def list_tags(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 100, cursor: Cursor = None) -> Listing:
        """Use to see a repository's tags and the commit each points at."""
        page = api.page(
            f"/repos/{repo}/tags",
            limit=limit,
            cursor=cursor,
            scope="",
            what=f"tags of {repo}",
            weight=weigh(ref_shape, ref_line),
            budget=ROOM,
        )
        items = [ref_shape(t) for t in page.items]
        lines = [ref_line(i) for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(fenced_lines(lines, f"tags of {repo}"))

    @toolset.tool(title="List commits", read_only=True, open_world=True, reads=IN_REPO)
    def list_commits(
        repo: RepoName,
        ref: Ref = None,
        path: Annotated[str | None, Field(description="only commits touching this path")] = None,
        author: Annotated[str | None, Field(description="login or email")] = None,
        since: Annotated[str | None, Field(description="ISO 8601 date")] = None,
        limit: Annotated[Limit, Field(le=100)] = 30,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to see the history of a branch or a path, newest first."""
        page = api.page(
            f"/repos/{repo}/commits",
            params={"sha": ref, "path": path, "author": author, "since": since},
            limit=limit,
            cursor=cursor,
            scope=json.dumps([ref, path, author, since]),
            what=f"commits of {repo}",
            weight=weigh(commit_summary, commit_line),
            budget=ROOM,
        )
        items = [commit_summary(c) for c in page.items]
        text = fenced_lines([commit_line(c) for c in items], f"commits of {repo}; messages written by their authors")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Get commit", read_only=True, open_world=True, reads=IN_REPO)
    def get_commit(
        repo: RepoName,
        sha: Annotated[str, Field(description="commit sha, branch or tag")],
        limit: Annotated[Limit, Field(le=300, description="Max files")] = 100,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read one commit: its full message, author, stats and the files it changed."""
        what = f"commit {Untrusted(sha)}"
        # One request: the commit and its first files. The files take at most half the room, the message the rest.
        page = api.page(
            f"/repos/{repo}/commits/{segment(sha)}",
            limit=limit,
            cursor=cursor,
            scope="",
            key="files",
            what=what,
            weight=weigh(file_shape, file_line),
            budget=ROOM // 2,
        )
        data = page.data if isinstance(page.data, dict) else {}
        stats = data.get("stats") or {}
        item = compact(
            CommitDetail(
                **commit_summary(data),
                parents=[untrusted(p, "sha") for p in data.get("parents") or []],
                additions=stats.get("additions") or 0,
                deletions=stats.get("deletions") or 0,
                url=untrusted(data, "html_url"),
            )
        )
        files = [file_shape(f) for f in page.items]
        listing = fenced_lines([file_line(f) for f in files], "files changed")
        head = (
            f"commit {item.get('sha')} by {author_of(item)} on"
            f" {said(day(item.get('date', _NONE).raw), 'an unknown date')},"
            f" +{said(stats.get('additions'), '0')} -{said(stats.get('deletions'), '0')}"
        )
        left = ROOM - cost(f"{head}\n{listing}", {"item": item, "parts": files})
        limit_chars = BODY_CHARS
        while True:
            message = fenced(
                untrusted(data, "commit", "message").raw,
                f"message of commit {Untrusted(item.get('sha', _NONE).raw[:7])}",
                author=author_of(item),
                markup=False,
                limit=limit_chars,
            )
            if cost(message) <= left or limit_chars <= 500:
                break
            limit_chars //= 2  # a message of quotes or tabs costs twice its length in JSON
        return Item(item=item, parts=files, next_cursor=page.next_cursor).with_text(f"{head}\n{message}\n{listing}")

    @toolset.tool(
        title="Get commit diff", read_only=True, open_world=True, budget=DIFF_PAGE_BYTES + 2_000, reads=IN_REPO
    )
    def get_commit_diff(
        repo: RepoName,
        sha: Annotated[str, Field(description="a commit, or base...head to compare two refs")],
        file: Annotated[str | None, Field(description="only this file's changes")] = None,
        limit: DiffBytes = DIFF_PAGE_BYTES,
        cursor: Cursor = None,
    ) -> Diff:
        """Use to read the changes of a commit or between two refs as a unified diff."""
        if "..." in sha:
            base, _, head = sha.partition("...")
            path = f"/repos/{repo}/compare/{segment(base)}...{segment(head)}"
        else:
            path = f"/repos/{repo}/commits/{segment(sha)}"
        text, next_cursor = diff_page(api, path, f"diff of {repo}@{Untrusted(sha)}", file, limit, cursor)
        return Diff(diff=text, next_cursor=next_cursor)

    @toolset.tool(title="Compare commits", read_only=True, open_world=True, reads=IN_REPO)
    def compare_commits(
        repo: RepoName,
        base: str,
        head: str,
        limit: Annotated[Limit, Field(le=250, description="Max commits")] = 50,
        cursor: Cursor = None,
    ) -> Item:
        """Use to see how far two branches or commits diverge: commits ahead, behind, and files changed."""
        between = f"{Untrusted(base)}...{Untrusted(head)}"
        # The commits page in half the room; the files GitHub lists with them (up to 300) share the other half.
        page = api.page(
            f"/repos/{repo}/compare/{segment(base)}...{segment(head)}",
            limit=limit,
            cursor=cursor,
            scope="",
            key="commits",
            what=f"comparing {between}",
            weight=weigh(commit_summary, commit_line),
            budget=ROOM // 2,
        )
        data = page.data if isinstance(page.data, dict) else {}
        all_files = [file_shape(f) for f in data.get("files") or [] if isinstance(f, dict)]
        commits = [commit_summary(c) for c in page.items]
        item = {
            "status": untrusted(data, "status"),
            "ahead_by": data.get("ahead_by"),
            "behind_by": data.get("behind_by"),
            "total_commits": data.get("total_commits"),
            "commits": commits,
            "url": untrusted(data, "html_url"),
        }
        item = {k: v for k, v in item.items() if v is not None and v != [] and not (isinstance(v, Untrusted) and not v)}
        head_line = (
            f"{Untrusted(head)} is {said(data.get('status'))} {Untrusted(base)}: {said(data.get('ahead_by'), '0')}"
            f" ahead, {said(data.get('behind_by'), '0')} behind, {len(all_files)} files changed"
        )
        listed = fenced_lines([commit_line(c) for c in commits], "commits; messages written by their authors")
        left = ROOM - cost(f"{head_line}\n{listed}", item)
        shown = fitting((cost(file_line(f) + "\n", f) for f in all_files), left) if all_files else 0
        files = all_files[:shown]
        listing = fenced_lines([file_line(f) for f in files], "files changed")
        if shown < len(all_files):
            listing += f"\n({len(all_files) - shown} more files not shown: get_commit_diff names each change)"
        return Item(item=item, parts=files, next_cursor=page.next_cursor).with_text(
            "\n".join(p for p in (head_line, listed, listing) if p)
        )

    @toolset.tool(title="List releases", read_only=True, open_world=True, reads=IN_REPO)
    def list_releases(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 10, cursor: Cursor = None) -> Listing:
        """Use to see a repository's releases, newest first, with their notes."""
        page = api.page(
            f"/repos/{repo}/releases",
            limit=limit,
            cursor=cursor,
            scope="",
            what=f"releases of {repo}",
            weight=release_cost,
            budget=ROOM,
        )
        items = [release_shape(r) for r in page.items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            "\n".join(release_text(r) for r in page.items)
        )

    # --- writes ------------------------------------------------------------------------------------------

    @toolset.tool(
        title="Create or update file",
        read_only=False,
        open_world=True,
        destructive=True,
        idempotent=True,
        writes=IN_REPO,
    )
    def create_or_update_file(
        repo: RepoName,
        path: NonEmpty,
        content: str,
        message: NonEmpty,
        branch: str | None = None,
        sha: Annotated[str | None, Field(description="to replace a file: its blob sha, from get_file_contents")] = None,
    ) -> str:
        """Use to write one file in one commit."""
        result = api.request(
            "PUT",
            f"/repos/{repo}/contents/{file_path(path)}",
            body=compact(
                {
                    "message": message,
                    "content": base64.b64encode(content.encode()).decode(),
                    "branch": branch,
                    "sha": sha,
                }
            ),
            what=f"writing {repo}:{Untrusted(path)}",
        ).data
        commit = (result or {}).get("commit") or {}
        written = required(result, "commit", "sha", what=f"writing {repo}:{Untrusted(path)}", applied=True)
        link = said(commit.get("html_url"), "no link given")
        return f"{'Updated' if sha else 'Created'} {Untrusted(path)} in commit {said(written)}: {link}"

    @toolset.tool(title="Delete file", read_only=False, open_world=True, destructive=True, writes=IN_REPO)
    def delete_file(
        repo: RepoName,
        path: NonEmpty,
        message: NonEmpty,
        sha: Annotated[str, Field(description="blob sha of the file (from get_file_contents)")],
        branch: str | None = None,
    ) -> str:
        """Use to delete one file in one commit."""
        result = api.request(
            "DELETE",
            f"/repos/{repo}/contents/{file_path(path)}",
            body=compact({"message": message, "sha": sha, "branch": branch}),
            what=f"deleting {repo}:{Untrusted(path)}",
        ).data
        deleted_in = required(result, "commit", "sha", what=f"deleting {repo}:{Untrusted(path)}", applied=True)
        return f"Deleted {Untrusted(path)} in commit {said(deleted_in)}"

    @toolset.tool(title="Push files", read_only=False, open_world=True, destructive=True, writes=IN_REPO)
    def push_files(
        repo: RepoName,
        branch: str,
        message: NonEmpty,
        files: Annotated[list[FileChange], Field(max_length=100)] = [],  # noqa: B006 - pydantic copies defaults
        delete: Annotated[list[str], Field(max_length=100)] = [],  # noqa: B006
        expected_sha: Annotated[
            str | None, Field(description="push only if the branch is still at this commit")
        ] = None,
    ) -> str:
        """Use to change several files (write or delete) in one commit on an existing branch."""
        if not files and not delete:
            raise InvalidArgument("Nothing to push.", hint="Give files to write or paths to delete.")
        ref = f"/repos/{repo}/git/ref/heads/{file_path(branch)}"
        # Five requests, the tree carrying every file: progress says which step a slow push is at.
        report_progress(0, 5, f"reading branch {Untrusted(branch)}")
        head = required(
            api.get(ref, what=f"branch {Untrusted(branch)} of {repo}"),
            "object",
            "sha",
            what=f"branch {Untrusted(branch)}",
        )
        if expected_sha and head != expected_sha:
            raise Conflict(
                f"Branch {Untrusted(branch)} is at {said(str(head)[:7])}, not {Untrusted(expected_sha[:7])}:"
                " someone pushed since.",
                hint="Read the new state, then push again with expected_sha set to it.",
            )
        base_commit = api.get(f"/repos/{repo}/git/commits/{head}", what=f"commit {said(head)}")
        base_tree = required(base_commit, "tree", "sha", what=f"commit {said(head)}")
        report_progress(2, 5, f"sending {len(files)} files, {len(delete)} deletions")
        entries: list[dict[str, Any]] = [
            {"path": f.path.strip("/"), "mode": "100644", "type": "blob", "content": f.content} for f in files
        ]
        entries += [{"path": p.strip("/"), "mode": "100644", "type": "blob", "sha": None} for p in delete]
        tree = api.request(
            "POST", f"/repos/{repo}/git/trees", body={"base_tree": base_tree, "tree": entries}, what="creating the tree"
        ).data
        report_progress(3, 5, "creating the commit")
        commit = api.request(
            "POST",
            f"/repos/{repo}/git/commits",
            body={"message": message, "tree": required(tree, "sha", what="creating the tree"), "parents": [head]},
            what="creating the commit",
        ).data
        new_commit = required(commit, "sha", what="creating the commit")
        report_progress(4, 5, f"moving {Untrusted(branch)}")
        # force=false: GitHub refuses (422) if the branch moved since we read it, instead of dropping that work.
        api.request(
            "PATCH",
            f"/repos/{repo}/git/refs/heads/{file_path(branch)}",
            body={"sha": new_commit, "force": False},
            what=f"moving {Untrusted(branch)} to the new commit",
        )
        return f"Pushed {said(new_commit)} to {Untrusted(branch)}: {len(files)} written, {len(delete)} deleted."

    @toolset.tool(title="Create branch", read_only=False, open_world=True, writes=IN_REPO)
    def create_branch(
        repo: RepoName,
        branch: NonEmpty,
        from_ref: Annotated[str | None, Field(description="branch or commit sha")] = None,
    ) -> str:
        """Use to start a new branch from another branch or a commit."""
        source = from_ref
        if source is None:
            source = str(required(api.get(f"/repos/{repo}", what=f"repository {repo}"), "default_branch", what=repo))
        sha = (
            source
            if _SHA.match(source)
            else required(
                api.get(
                    f"/repos/{repo}/git/ref/heads/{file_path(source)}", what=f"branch {Untrusted(source)} of {repo}"
                ),
                "object",
                "sha",
                what=f"branch {Untrusted(source)} of {repo}",
            )
        )
        api.request(
            "POST",
            f"/repos/{repo}/git/refs",
            body={"ref": f"refs/heads/{branch}", "sha": sha},
            what=f"creating branch {Untrusted(branch)}",
        )
        return f"Created branch {Untrusted(branch)} at {said(str(sha)[:7])} (from {Untrusted(source)})."

    @toolset.tool(title="Fork repository", read_only=False, open_world=True, writes=IN_REPO)
    def fork_repository(
        repo: RepoName,
        organization: Annotated[
            str | None, Field(description="fork into this organization instead of your account")
        ] = None,
        name: str | None = None,
    ) -> str:
        """Use to fork a repository into your account or an organization."""
        owner, repo_name = split_repo(repo)
        if api.allow:
            api.allow.check(organization or api.login(), name or repo_name)
        fork = api.request(
            "POST",
            f"/repos/{repo}/forks",
            body=compact({"organization": organization, "name": name}),
            what=f"forking {repo}",
        ).data
        return (
            f"Forking {owner}/{repo_name} to {said(untrusted(fork, 'full_name'), 'your account')}"
            f" (GitHub finishes in the background): {said((fork or {}).get('html_url'), 'no link given')}"
        )

    return toolset


def _decode(data: dict[str, Any]) -> bytes | None:
    if data.get("encoding") != "base64" or (not data.get("content") and data.get("size")):
        return None
    try:
        return base64.b64decode(str(data.get("content") or ""))
    except (binascii.Error, ValueError):
        return None


def _directory(data: list[Any], path: str, where: str, repo: str) -> FileContent:
    """A directory's entries, as many as fit the answer (a directory lists up to 1,000); the tree tool pages."""
    entries = [entry_shape(e, "name") for e in data if isinstance(e, dict)]
    head = f"{where}: {len(entries)} entries"
    shown = fitting((cost(dir_line(e) + "\n", e) for e in entries), room_for(FILE_BYTES + 2_000) - cost(head))
    listing = fenced_lines([dir_line(e) for e in entries[:shown]], f"names in {where}")
    if shown < len(entries):
        listing += f"\n({len(entries) - shown} more entries: get_repository_tree with path pages through them)"
    result = FileContent(path=Untrusted(path), entries=entries[:shown] if entries else None)
    result._text = f"{head}\n{listing}"
    return result


@dataclass
class _Window:
    """The lines of a file a call shows, read from its chunks without holding the rest."""

    lines: list[str] = field(default_factory=list)
    more: bool = False
    """Lines follow the window (within the range asked for)."""
    total: int | None = None
    """The file's line count, when it was read to its end."""
    cut: bool = False
    """The window is one line longer than the whole room, shown up to there (the rest of it is not read)."""
    binary: bool = False


def _window(chunks: Iterable[bytes], start_line: int, end_line: int | None, room: int) -> _Window:
    """Lines `start_line`..`end_line` of the file whose bytes come in `chunks`, within `room` bytes of JSON.

    Reading stops as soon as the window is full: a line is held only while it is in the window, and never more
    than `room` bytes of it, so neither a huge file nor a huge line is read or held whole.
    """
    window = _Window()
    last = end_line or sys.maxsize
    number, used, held = 1, 0, bytearray()
    partial = False  # bytes of a line whose end has not come yet

    def full() -> bool:
        """Takes the line held into the window; True when the window can take no more."""
        nonlocal used
        text = bytes(held).decode(errors="replace")
        size = json_size(text)
        if window.lines and used + size > room:
            window.more = True
            return True
        if size > room:  # one line longer than the whole room: its head
            while json_size(text) > room:
                text = text[: max(len(text) * room // json_size(text) - 1, 0)]
            window.lines.append(text)
            window.more = window.cut = True
            return True
        window.lines.append(text)
        used += size
        return False

    for chunk in chunks:
        # Every byte read, not the first 8,000 as git looks: a NUL further on (at 16,320 in one case) made a binary
        # file read as text. A file under 1 MB comes as one chunk, so all of it is looked at.
        if b"\x00" in chunk:
            window.binary = True
            return window
        position = 0
        while position < len(chunk):
            newline = chunk.find(b"\n", position)
            end = len(chunk) if newline < 0 else newline + 1
            shown = start_line <= number <= last
            if shown:
                held += chunk[position : min(end, position + room + 1 - len(held))]
                if len(held) > room and full():  # over the room whatever its end holds: stop reading here
                    return window
            position = end
            partial = newline < 0
            if partial:
                break
            if shown and full():
                return window
            number += 1
            held.clear()
            if number > last:
                return window
    if partial:  # a last line without a newline
        if start_line <= number <= last and full():
            return window
        number += 1
    window.total = number - 1
    return window
