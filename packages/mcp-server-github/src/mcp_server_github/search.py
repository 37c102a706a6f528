"""Search: code, repositories and users across GitHub (inside the allow-list when one is set)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from mcp_server_core import Cursor, Limit, Toolset, Untrusted
from pydantic import Field

from mcp_server_github.client import GitHubApi, Page
from mcp_server_github.shapes import (
    ROOM,
    SEARCHED,
    Listing,
    NonEmpty,
    compact,
    fenced_lines,
    said,
    split_repo,
    untrusted,
    weigh,
)

Query = Annotated[NonEmpty, Field(max_length=256, description="GitHub search syntax")]


def search_page(
    api: GitHubApi,
    kind: str,
    query: str,
    *,
    limit: int,
    cursor: str | None,
    what: str,
    params: dict[str, Any] | None = None,
    scope: str | None = None,
    weight: Callable[[Any], int] | None = None,
) -> Page:
    """One page of `/search/{kind}` hits; its cursor is bound to the query, so it cannot page another search."""
    return api.page(
        f"/search/{kind}",
        params={"q": query, **(params or {})},
        limit=limit,
        cursor=cursor,
        scope=query if scope is None else scope,
        key="items",
        what=what,
        weight=weight,
        budget=ROOM,
    )


class CodeHit(TypedDict, total=False):
    repo: Untrusted
    path: Untrusted
    sha: Untrusted


class RepoHit(TypedDict, total=False):
    repo: Untrusted
    description: Untrusted
    stars: int
    language: Untrusted
    private: bool | None
    archived: bool | None


class UserHit(TypedDict, total=False):
    login: Untrusted
    type: Untrusted


def code_hit(hit: dict[str, Any]) -> CodeHit:
    return compact(
        CodeHit(repo=untrusted(hit, "repository", "full_name"), path=untrusted(hit, "path"), sha=untrusted(hit, "sha"))
    )


def code_line(hit: CodeHit) -> str:
    return f"{hit.get('repo')}:{hit.get('path')}"


def repo_hit(found: dict[str, Any]) -> RepoHit:
    return compact(
        RepoHit(
            repo=untrusted(found, "full_name"),
            description=untrusted(found, "description"),
            stars=found.get("stargazers_count") or 0,
            language=untrusted(found, "language"),
            private=bool(found.get("private")) or None,
            archived=bool(found.get("archived")) or None,
        )
    )


def repo_line(hit: RepoHit) -> str:
    return f"{hit.get('repo')} ★{hit.get('stars', 0)} {hit.get('language', '')}" + (
        f": {hit['description']}" if hit.get("description") else ""
    )


def user_hit(user: dict[str, Any]) -> UserHit:
    return compact(UserHit(login=untrusted(user, "login"), type=untrusted(user, "type")))


def user_line(hit: UserHit) -> str:
    return f"{hit.get('login')} ({said(hit.get('type'))})"


def search_toolset(api: GitHubApi) -> Toolset:
    toolset = Toolset("search", "Search code, repositories and users", default=False)

    @toolset.tool(title="Search code", read_only=True, open_world=True, reads=SEARCHED)
    def search_code(query: Query, limit: Annotated[Limit, Field(le=100)] = 30, cursor: Cursor = None) -> Listing:
        """Use to find files by content across repositories: 'def main language:python repo:o/r'."""
        query = api.allow.scope_search(query)
        page = search_page(
            api, "code", query, limit=limit, cursor=cursor, what="code search", weight=weigh(code_hit, code_line)
        )
        items = [hit for hit in map(code_hit, page.items) if api.allow.allows(*split_repo(hit.get("repo", _NONE).raw))]
        text = fenced_lines([code_line(i) for i in items], f"code search for {Untrusted(query)}")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Search repositories", read_only=True, open_world=True, reads=SEARCHED)
    def search_repositories(
        query: Query,
        sort: Literal["best-match", "stars", "forks", "updated"] = "best-match",
        limit: Annotated[Limit, Field(le=100)] = 30,
        cursor: Cursor = None,
    ) -> Listing:
        """Use to find repositories by name, topic, language or stars: 'mcp server language:python'."""
        query = api.allow.scope_search(query)
        page = search_page(
            api,
            "repositories",
            query,
            params={"sort": None if sort == "best-match" else sort},
            scope=f"{query}\n{sort}",
            limit=limit,
            cursor=cursor,
            what="repository search",
            weight=weigh(repo_hit, repo_line),
        )
        items = [hit for hit in map(repo_hit, page.items) if api.allow.allows(*split_repo(hit.get("repo", _NONE).raw))]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            fenced_lines(
                [repo_line(i) for i in items],
                f"repositories matching {Untrusted(query)}; descriptions written by their owners",
            )
        )

    @toolset.tool(title="Search users", read_only=True, open_world=True, reads=SEARCHED)
    def search_users(query: Query, limit: Annotated[Limit, Field(le=100)] = 30, cursor: Cursor = None) -> Listing:
        """Use to find GitHub users or organizations by login, name, location or followers."""
        page = search_page(
            api, "users", query, limit=limit, cursor=cursor, what="user search", weight=weigh(user_hit, user_line)
        )
        items = [user_hit(u) for u in page.items]
        text = fenced_lines([user_line(i) for i in items], f"users matching {Untrusted(query)}")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    return toolset


_NONE = Untrusted("")
