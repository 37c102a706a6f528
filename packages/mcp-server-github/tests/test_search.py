"""Search against the fake: code, repositories, users, paged by cursor."""

from __future__ import annotations

from fake_github import FakeGitHub, server_for
from fastmcp import Client


async def test_code_search_finds_files_and_private_repositories_stay_hidden_anonymously(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        signed_in = (await client.call_tool("search_code", {"query": "api_key"})).structured_content
    async with Client(server_for(fake, token=None)) as client:
        anonymous = (await client.call_tool("search_code", {"query": "api_key"})).structured_content
    assert [(i["repo"], i["path"]) for i in signed_in["items"]] == [("acme/secret", ".env")]
    assert anonymous["items"] == []


async def test_repository_and_user_search_page_by_cursor(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        repos = (await client.call_tool("search_repositories", {"query": "acme", "limit": 2})).structured_content
        rest = (
            await client.call_tool("search_repositories", {"query": "acme", "limit": 2, "cursor": repos["next_cursor"]})
        ).structured_content
        users = (await client.call_tool("search_users", {"query": "o"})).structured_content
    names = [r["repo"] for r in repos["items"] + rest["items"]]
    assert sorted(names) == ["acme/locked", "acme/secret", "acme/widgets"]
    assert repos["items"][0]["stars"] == 42
    assert [u["login"] for u in users["items"]] == ["octocat", "bob", "mallory", "dependabot[bot]", "ghost"]
    assert fake.requests[1].query["q"] == "acme"
    assert fake.requests[1].query["page"] == "2"


async def test_a_search_query_with_plus_and_ampersand_pages_unchanged(fake: FakeGitHub) -> None:
    # GitHub percent-encodes the next page's link; decoded as a form, a raw '+' would turn into a space.
    query = "repo:acme/widgets is:issue number -label:c++ -label:r&d"
    async with Client(server_for(fake)) as client:
        first = (await client.call_tool("search_issues", {"query": query, "limit": 10})).structured_content
        await client.call_tool("search_issues", {"query": query, "limit": 10, "cursor": first["next_cursor"]})
    searches = [r.query for r in fake.requests if r.path == "/search/issues"]
    assert [s["q"] for s in searches] == [query, query]
    assert [s.get("page", "1") for s in searches] == ["1", "2"]
