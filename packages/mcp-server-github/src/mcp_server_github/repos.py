"""Repositories: file contents, tree, branches, tags, commits, compare, releases; file writes, push, branch, fork."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Annotated, Any
from urllib.parse import quote

from mcp_server_core import (
    Conflict,
    Cursor,
    InvalidArgument,
    Limit,
    Rendered,
    Toolset,
    decode_cursor,
    encode_cursor,
    report_progress,
)
from pydantic import BaseModel, Field, PrivateAttr

from mcp_server_github.client import GitHubApi, required
from mcp_server_github.diffs import DIFF_PAGE_BYTES, Diff, DiffBytes, diff_page
from mcp_server_github.shapes import (
    Item,
    Listing,
    NonEmpty,
    Number,
    RepoName,
    compact,
    day,
    fenced,
    fenced_lines,
    login_of,
    one_line,
    said,
    split_repo,
)

FILE_BYTES = 14_000
RAW_MEDIA = "application/vnd.github.raw"
_SHA = re.compile(r"^[0-9a-f]{40}$")
Ref = str | None  # a branch, tag or commit; GitHub takes the default branch without one


class FileContent(Rendered):
    path: str
    sha: str | None = None
    size: int | None = None
    content: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    total_lines: int | None = None
    next_start_line: int | None = None
    entries: list[dict[str, Any]] | None = None
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


def commit_line(c: dict[str, Any]) -> str:
    commit = c.get("commit") or {}
    author = login_of(c, "author") if c.get("author") else one_line((commit.get("author") or {}).get("name"), 60)
    message = one_line(str(commit.get("message") or "").split("\n", 1)[0], 200)
    date = said(day((commit.get("author") or {}).get("date")), "undated")
    return f"{str(c.get('sha'))[:7]} {date} {author}: {message}"


def commit_summary(c: dict[str, Any]) -> dict[str, Any]:
    commit = c.get("commit") or {}
    return compact(
        {
            "sha": c.get("sha"),
            "author": login_of(c, "author")
            if c.get("author")
            else one_line((commit.get("author") or {}).get("name"), 60),
            "date": (commit.get("author") or {}).get("date"),
            "message": one_line(str(commit.get("message") or "").split("\n", 1)[0], 200),
        }
    )


def changed_file(f: dict[str, Any]) -> dict[str, Any]:
    return compact(
        {
            "path": f.get("filename"),
            "status": f.get("status"),
            "additions": f.get("additions"),
            "deletions": f.get("deletions"),
        }
    )


def changed_files_text(files: list[dict[str, Any]]) -> str:
    lines = [
        f"{said(f.get('status'))} {f.get('path')} +{f.get('additions', 0)} -{f.get('deletions', 0)}" for f in files
    ]
    return fenced_lines(lines, "files changed")


def repos_toolset(api: GitHubApi) -> Toolset:
    toolset = Toolset(
        "repos",
        "Files, tree, branches, tags, commits, compare, releases; write files, push, branch, fork",
        default=False,
    )

    @toolset.tool(title="Get file contents", read_only=True, open_world=True, budget=FILE_BYTES + 2_000)
    def get_file_contents(
        repo: RepoName,
        path: Annotated[str, Field(description="file or directory")] = "",
        ref: Ref = None,
        start_line: Number = 1,
        end_line: Number | None = None,
    ) -> FileContent:
        """Use to read a file (by line range) or list a directory in a repository."""
        where = f"{repo}:{path or '/'}" + (f"@{ref}" if ref else "")
        url = f"/repos/{repo}/contents/{file_path(path)}".rstrip("/")
        data = api.get(url, params={"ref": ref}, what=where, expect=(dict, list))
        if isinstance(data, list):
            entries = [
                compact({"name": one_line(e.get("name"), 300), "type": e.get("type"), "size": e.get("size") or None})
                for e in data
            ]
            lines = [f"{e['type']} {e['name']}" + (f" ({e['size']} bytes)" if e.get("size") else "") for e in entries]
            result = FileContent(path=path, entries=entries)
            result._text = f"{where}: {len(entries)} entries\n" + fenced_lines(lines, f"names in {where}")
            return result
        if not isinstance(data, dict) or data.get("type") != "file":
            kind = data.get("type") if isinstance(data, dict) else None
            raise InvalidArgument(
                f"{where} is a {kind}, not a file." if kind else f"GitHub's answer for {where} holds no file.",
                hint="List the directory (path of its parent) to see what is there.",
            )
        raw = _decode(data)
        if raw is None:  # over 1 MB: the contents API leaves the content out
            text_body = api.request("GET", url, params={"ref": ref}, accept=RAW_MEDIA, what=where).data
            raw = text_body.encode() if isinstance(text_body, str) else b""
        # The whole file, not its first 8,000 bytes as git does: a NUL further on (at 16,320 in one case) made a
        # binary file read as text. Looking for one byte in what is already held costs next to nothing.
        if b"\x00" in raw:
            result = FileContent(path=path, sha=data.get("sha"), size=len(raw))
            result._text = f"{where} is a binary file of {len(raw):,} bytes; not shown."
            return result
        lines = raw.decode(errors="replace").splitlines(keepends=True)
        last = min(end_line or len(lines), len(lines))
        if start_line > max(len(lines), 1):
            raise InvalidArgument(f"{where} has {len(lines)} lines; start_line {start_line} is past the end.")
        chosen: list[str] = []
        used = 0
        for line in lines[start_line - 1 : last]:
            used += len(line.encode())
            if used > FILE_BYTES and chosen:
                break
            chosen.append(line)
        shown_end = start_line + len(chosen) - 1
        more = shown_end < last
        content = "".join(chosen)
        result = FileContent(
            path=path,
            sha=data.get("sha"),
            size=data.get("size"),
            content=content,
            start_line=start_line,
            end_line=shown_end,
            total_lines=len(lines),
            next_start_line=shown_end + 1 if more else None,
        )
        head = f"{where} lines {start_line}-{shown_end} of {len(lines)} (sha {str(data.get('sha'))[:7]})"
        tail = f"\n[more: start_line={shown_end + 1}]" if more else ""
        result._text = (
            head
            + "\n"
            + fenced(content, f"file {where}", limit=FILE_BYTES * 2, markup=False, author="its committers")
            + tail
        )
        return result

    @toolset.tool(title="Get repository tree", read_only=True, open_world=True)
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
            compact({"path": e.get("path"), "type": e.get("type"), "size": e.get("size")})
            for e in tree.get("tree") or []
            if str(e.get("path", "")).startswith(prefix)
        ]
        page = entries[start : start + limit]
        more = start + limit < len(entries)
        lines = [f"{e['path']}{'/' if e.get('type') == 'tree' else ''}" for e in page]
        note = "\n[GitHub truncated this tree; list a subdirectory with path]" if tree.get("truncated") else ""
        text = f"{len(entries)} entries under {prefix or '/'}\n" + fenced_lines(lines, f"paths in {repo}") + note
        return Listing(
            items=page, next_cursor=encode_cursor({"offset": start + limit}, scope=scope) if more else None
        ).with_text(text)

    @toolset.tool(title="List branches", read_only=True, open_world=True)
    def list_branches(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 100, cursor: Cursor = None) -> Listing:
        """Use to see a repository's branches and the commit each points at."""
        page = api.page(f"/repos/{repo}/branches", limit=limit, cursor=cursor, scope="", what=f"branches of {repo}")
        items = [
            compact(
                {
                    "name": b.get("name"),
                    "sha": (b.get("commit") or {}).get("sha"),
                    "protected": b.get("protected") or None,
                }
            )
            for b in page.items
        ]
        lines = [f"{i['name']} {str(i.get('sha'))[:7]}{' protected' if i.get('protected') else ''}" for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(fenced_lines(lines, f"branches of {repo}"))

    @toolset.tool(title="List tags", read_only=True, open_world=True)
    def list_tags(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 100, cursor: Cursor = None) -> Listing:
        """Use to see a repository's tags and the commit each points at."""
        page = api.page(f"/repos/{repo}/tags", limit=limit, cursor=cursor, scope="", what=f"tags of {repo}")
        items = [{"name": t.get("name"), "sha": (t.get("commit") or {}).get("sha")} for t in page.items]
        lines = [f"{i['name']} {str(i.get('sha'))[:7]}" for i in items]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(fenced_lines(lines, f"tags of {repo}"))

    @toolset.tool(title="List commits", read_only=True, open_world=True)
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
        )
        items = [commit_summary(c) for c in page.items]
        text = fenced_lines(
            [commit_line(c) for c in page.items], f"commits of {repo}; messages written by their authors"
        )
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Get commit", read_only=True, open_world=True)
    def get_commit(
        repo: RepoName,
        sha: Annotated[str, Field(description="commit sha, branch or tag")],
        limit: Annotated[Limit, Field(le=300, description="Max files")] = 100,
        cursor: Cursor = None,
    ) -> Item:
        """Use to read one commit: its full message, author, stats and the files it changed."""
        page = api.page(
            f"/repos/{repo}/commits/{segment(sha)}",
            limit=limit,
            cursor=cursor,
            scope="",
            key="files",
            what=f"commit {sha}",
        )
        data = page.data if isinstance(page.data, dict) else {}
        commit = data.get("commit") or {}
        files = [changed_file(f) for f in page.items]
        stats = data.get("stats") or {}
        item = compact(
            {
                **commit_summary(data),
                "parents": [p.get("sha") for p in data.get("parents") or []],
                "additions": stats.get("additions"),
                "deletions": stats.get("deletions"),
                "url": data.get("html_url"),
            }
        )
        author = item.get("author")
        head = (
            f"commit {data.get('sha')} by {said(author)} on {said(day(item.get('date')), 'an unknown date')},"
            f" +{stats.get('additions', 0)} -{stats.get('deletions', 0)}"
        )
        message = fenced(
            commit.get("message"), f"message of commit {str(data.get('sha'))[:7]}", author=said(author), markup=False
        )
        listing = changed_files_text(files)
        return Item(item=item, parts=files, next_cursor=page.next_cursor).with_text(f"{head}\n{message}\n{listing}")

    @toolset.tool(title="Get commit diff", read_only=True, open_world=True, budget=DIFF_PAGE_BYTES + 2_000)
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
        text, next_cursor = diff_page(api, path, f"diff of {repo}@{sha}", file, limit, cursor)
        return Diff(diff=text, next_cursor=next_cursor)

    @toolset.tool(title="Compare commits", read_only=True, open_world=True)
    def compare_commits(
        repo: RepoName,
        base: str,
        head: str,
        limit: Annotated[Limit, Field(le=250, description="Max commits")] = 50,
        cursor: Cursor = None,
    ) -> Item:
        """Use to see how far two branches or commits diverge: commits ahead, behind, and files changed."""
        page = api.page(
            f"/repos/{repo}/compare/{segment(base)}...{segment(head)}",
            limit=limit,
            cursor=cursor,
            scope="",
            key="commits",
            what=f"comparing {base}...{head}",
        )
        data = page.data if isinstance(page.data, dict) else {}
        files = [changed_file(f) for f in data.get("files") or []]
        item = compact(
            {
                "status": data.get("status"),
                "ahead_by": data.get("ahead_by"),
                "behind_by": data.get("behind_by"),
                "total_commits": data.get("total_commits"),
                "commits": [commit_summary(c) for c in page.items],
                "url": data.get("html_url"),
            }
        )
        head_line = (
            f"{head} is {said(data.get('status'))} {base}: {data.get('ahead_by') or 0} ahead,"
            f" {data.get('behind_by') or 0} behind, {len(files)} files changed"
        )
        commits = fenced_lines([commit_line(c) for c in page.items], "commits; messages written by their authors")
        listing = changed_files_text(files)
        return Item(item=item, parts=files, next_cursor=page.next_cursor).with_text(
            "\n".join(p for p in (head_line, commits, listing) if p)
        )

    @toolset.tool(title="List releases", read_only=True, open_world=True)
    def list_releases(repo: RepoName, limit: Annotated[Limit, Field(le=100)] = 10, cursor: Cursor = None) -> Listing:
        """Use to see a repository's releases, newest first, with their notes."""
        page = api.page(f"/repos/{repo}/releases", limit=limit, cursor=cursor, scope="", what=f"releases of {repo}")
        items = [
            compact(
                {
                    "tag": r.get("tag_name"),
                    "name": one_line(r.get("name"), 200),
                    "draft": r.get("draft") or None,
                    "prerelease": r.get("prerelease") or None,
                    "published": day(r.get("published_at")),
                    "author": login_of(r, "author"),
                    "url": r.get("html_url"),
                }
            )
            for r in page.items
        ]
        parts = [
            f"{i.get('tag')} {said(i.get('published'), 'unpublished')}"
            f"{' prerelease' if i.get('prerelease') else ''}{' draft' if i.get('draft') else ''}\n"
            + fenced(
                f"{r.get('name') or ''}\n\n{r.get('body') or ''}",
                f"notes of release {i.get('tag')}",
                author=i.get("author"),
                limit=1_500,
            )
            for i, r in zip(items, page.items, strict=True)
        ]
        return Listing(items=items, next_cursor=page.next_cursor).with_text("\n".join(parts))

    # --- writes ------------------------------------------------------------------------------------------

    @toolset.tool(title="Create or update file", read_only=False, open_world=True, destructive=True, idempotent=True)
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
            what=f"writing {repo}:{path}",
        ).data
        commit = (result or {}).get("commit") or {}
        written = required(result, "commit", "sha", what=f"writing {repo}:{path}", applied=True)
        link = said(commit.get("html_url"), "no link given")
        return f"{'Updated' if sha else 'Created'} {path} in commit {written}: {link}"

    @toolset.tool(title="Delete file", read_only=False, open_world=True, destructive=True)
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
            what=f"deleting {repo}:{path}",
        ).data
        deleted_in = required(result, "commit", "sha", what=f"deleting {repo}:{path}", applied=True)
        return f"Deleted {path} in commit {deleted_in}"

    @toolset.tool(title="Push files", read_only=False, open_world=True, destructive=True)
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
        report_progress(0, 5, f"reading branch {branch}")
        head = required(api.get(ref, what=f"branch {branch} of {repo}"), "object", "sha", what=f"branch {branch}")
        if expected_sha and head != expected_sha:
            raise Conflict(
                f"Branch {branch} is at {head[:7]}, not {expected_sha[:7]}: someone pushed since.",
                hint="Read the new state, then push again with expected_sha set to it.",
            )
        base_commit = api.get(f"/repos/{repo}/git/commits/{head}", what=f"commit {head}")
        base_tree = required(base_commit, "tree", "sha", what=f"commit {head}")
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
        report_progress(4, 5, f"moving {branch}")
        # force=false: GitHub refuses (422) if the branch moved since we read it, instead of dropping that work.
        api.request(
            "PATCH",
            f"/repos/{repo}/git/refs/heads/{file_path(branch)}",
            body={"sha": new_commit, "force": False},
            what=f"moving {branch} to the new commit",
        )
        return f"Pushed {new_commit} to {branch}: {len(files)} written, {len(delete)} deleted."

    @toolset.tool(title="Create branch", read_only=False, open_world=True)
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
                api.get(f"/repos/{repo}/git/ref/heads/{file_path(source)}", what=f"branch {source} of {repo}"),
                "object",
                "sha",
                what=f"branch {source} of {repo}",
            )
        )
        api.request(
            "POST",
            f"/repos/{repo}/git/refs",
            body={"ref": f"refs/heads/{branch}", "sha": sha},
            what=f"creating branch {branch}",
        )
        return f"Created branch {branch} at {sha[:7]} (from {source})."

    @toolset.tool(title="Fork repository", read_only=False, open_world=True)
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
            f"Forking {owner}/{repo_name} to {said((fork or {}).get('full_name'), 'your account')}"
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
