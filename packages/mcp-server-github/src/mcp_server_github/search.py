"""Search: code, repositories and users across GitHub (inside the allow-list when one is set)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp_server_core import Cursor, Limit, Toolset
from pydantic import Field

from mcp_server_github.client import GitHubApi, Page
from mcp_server_github.shapes import Listing, NonEmpty, compact, fenced_lines, one_line, said, split_repo

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
    )


def search_toolset(api: GitHubApi) -> Toolset:
    toolset = Toolset("search", "Search code, repositories and users", default=False)

    @toolset.tool(title="Search code", read_only=True, open_world=True)
    def search_code(query: Query, limit: Annotated[Limit, Field(le=100)] = 30, cursor: Cursor = None) -> Listing:
        """Use to find files by content across repositories: 'def main language:python repo:o/r'."""
        query = api.allow.scope_search(query)
        page = search_page(api, "code", query, limit=limit, cursor=cursor, what="code search")
        items = []
        for hit in page.items:
            repo = str((hit.get("repository") or {}).get("full_name", ""))
            if api.allow.allows(*split_repo(repo)):
                items.append(compact({"repo": repo, "path": hit.get("path"), "sha": hit.get("sha")}))
        text = fenced_lines([f"{i['repo']}:{i.get('path')}" for i in items], f"code search for {query!r}")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    @toolset.tool(title="Search repositories", read_only=True, open_world=True)
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
        )
        items = [
            compact(
                {
                    "repo": r.get("full_name"),
                    "description": one_line(r.get("description"), 200),
                    "stars": r.get("stargazers_count"),
                    "language": r.get("language"),
                    "private": r.get("private") or None,
                    "archived": r.get("archived") or None,
                }
            )
            for r in page.items
            if api.allow.allows(*split_repo(str(r.get("full_name", ""))))
        ]
        lines = [
            f"{i['repo']} ★{i.get('stars', 0)} {i.get('language') or ''}"
            + (f": {i['description']}" if i.get("description") else "")
            for i in items
        ]
        return Listing(items=items, next_cursor=page.next_cursor).with_text(
            fenced_lines(lines, f"repositories matching {query!r}; descriptions written by their owners")
        )

    @toolset.tool(title="Search users", read_only=True, open_world=True)
    def search_users(query: Query, limit: Annotated[Limit, Field(le=100)] = 30, cursor: Cursor = None) -> Listing:
        """Use to find GitHub users or organizations by login, name, location or followers."""
        page = search_page(api, "users", query, limit=limit, cursor=cursor, what="user search")
        items = [compact({"login": u.get("login"), "type": u.get("type")}) for u in page.items]
        text = fenced_lines([f"{i['login']} ({said(i.get('type'))})" for i in items], f"users matching {query!r}")
        return Listing(items=items, next_cursor=page.next_cursor).with_text(text)

    return toolset
