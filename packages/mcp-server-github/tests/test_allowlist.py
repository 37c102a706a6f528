"""The allow-list: calls outside it are refused before any request leaves, and searches stay inside it."""

from __future__ import annotations

import pytest
from fake_github import FakeGitHub, server_for, text_of
from fastmcp import Client
from mcp_server_core import Refused
from mcp_server_github.allowlist import AllowList
from mcp_server_github.settings import GitHubSettings


def test_entries_match_without_regard_to_case_and_owner_star_matches_every_repository() -> None:
    allow = AllowList(["acme/widgets", "octocat/*"])
    assert allow.allows("ACME", "Widgets")
    assert allow.allows("octocat", "anything")
    assert not allow.allows("acme", "secret")
    assert not allow.allows("evil", "widgets")
    assert AllowList([]).allows("anyone", "anything")


@pytest.mark.parametrize("entry", ["acme", "acme/", "*/*", "acme/wid/gets", "ac me/x", "-acme/x"])
def test_a_malformed_entry_is_refused_at_start(entry: str) -> None:
    with pytest.raises(ValueError, match="is not owner/name or owner/\\*"):
        GitHubSettings(repos=[entry])


def test_searches_are_narrowed_to_the_list_and_cannot_widen_it() -> None:
    allow = AllowList(["acme/widgets", "octocat/*"])
    assert allow.scope_search("crash is:issue") == "crash is:issue repo:acme/widgets user:octocat"
    assert allow.scope_search("crash repo:acme/widgets") == "crash repo:acme/widgets"
    assert allow.scope_search("x -repo:acme/secret") == "x -repo:acme/secret repo:acme/widgets user:octocat"
    assert allow.scope_search("(a b) NOT repo:acme/x") == "(a b) -repo:acme/x repo:acme/widgets user:octocat"
    assert allow.scope_search("a not repo:acme/widgets") == "a -repo:acme/widgets repo:acme/widgets user:octocat"
    for widening in ("x repo:acme/secret", "x org:acme", "x user:mallory", "x repo:acme/widgets repo:acme/secret"):
        with pytest.raises(Refused):
            allow.scope_search(widening)


async def test_reading_outside_the_list_is_refused_without_a_request(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, repos=["acme/widgets"])) as client:
        fake.reset_requests()
        for name, arguments in [
            ("get_issue", {"repo": "acme/secret", "number": 1}),
            ("get_file_contents", {"repo": "acme/secret", "path": ".env"}),
            ("list_commits", {"repo": "ACME/Secret"}),
            ("search_issues", {"query": "repo:acme/secret env"}),
            ("search_code", {"query": "API_KEY org:acme"}),
        ]:
            result = await client.call_tool_mcp(name, arguments)
            assert result.is_error, name
            assert "outside this server's allow-list (acme/widgets)" in text_of(result), text_of(result)
        assert fake.count() == 0
        allowed = await client.call_tool_mcp("get_issue", {"repo": "acme/widgets", "number": 1})
    assert not allowed.is_error


async def test_writing_outside_the_list_is_refused_without_a_request(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, repos=["acme/widgets"])) as client:
        fake.reset_requests()
        comment = await client.call_tool_mcp("add_issue_comment", {"repo": "octocat/hello", "number": 1, "body": "x"})
        push = await client.call_tool_mcp(
            "push_files",
            {"repo": "acme/secret", "branch": "main", "message": "m", "files": [{"path": "a", "content": "b"}]},
        )
        # Forking an allowed repository into the user's account writes outside the list too.
        fork = await client.call_tool_mcp("fork_repository", {"repo": "acme/widgets"})
    assert comment.is_error
    assert push.is_error
    assert fork.is_error
    assert "octocat/widgets is outside" in text_of(fork)
    assert [r.path for r in fake.requests] == ["/user"], "only the login, to name the fork's destination"


async def test_an_unscoped_search_is_narrowed_and_its_results_filtered(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, repos=["acme/widgets"])) as client:
        fake.reset_requests()
        issues = await client.call_tool("search_issues", {"query": "crash"})
        code = await client.call_tool("search_code", {"query": "hello"})
    assert fake.requests[0].query["q"] == "crash is:issue repo:acme/widgets"
    assert fake.requests[1].query["q"] == "hello repo:acme/widgets"
    assert {i["repo"] for i in issues.structured_content["items"]} == {"acme/widgets"}
    assert code.structured_content["items"] == []


# Issue 28: the old check wanted whitespace before `repo:`, so a grouped or ORed scope went to GitHub as written.
REACHING_OUT = [
    ("search_code", "password repo:acme/widgets OR (repo:acme/secret)"),
    ("search_issues", "repo:acme/widgets OR (repo:acme/secret) password"),
    ("search_repositories", "repo:acme/widgets OR (user:acme)"),
    ("search_code", "API_KEY (repo:acme/secret)"),
    ("search_code", 'API_KEY "x"repo:acme/secret'),
    ("search_code", "API_KEY repo :acme/secret"),
    ("search_code", "API_KEY NOT -repo:acme/secret"),
    ("search_code", "API_KEY Org:acme"),
    ("search_code", "API_KEY OR hunter2"),
    ("search_code", "API_KEY NOT"),
    ("search_code", "API_KEY NOT NOT repo:acme/secret"),
    ("search_repositories", "widgets (secret"),
    ("search_code", "API_KEY or hunter2"),
    ("search_code", "API_KEY not"),
    ("search_code", "API_KEY\u200brepo:acme/secret"),
    ("search_code", "API_KEY repo\u200b:acme/secret"),
]


async def test_a_search_cannot_reach_past_the_list_through_its_syntax(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, repos=["acme/widgets"])) as client:
        fake.reset_requests()
        for tool, query in REACHING_OUT:
            result = await client.call_tool_mcp(tool, {"query": query})
            assert result.is_error, (tool, query, text_of(result))
            assert "unexpectedly" not in text_of(result), text_of(result)
    assert fake.count() == 0, [r.query for r in fake.requests]


async def test_github_receives_the_query_with_the_scope_the_server_built(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, repos=["acme/widgets"])) as client:
        fake.reset_requests()
        code = await client.call_tool("search_code", {"query": "API_KEY NOT repo:acme/secret"})
        issues = await client.call_tool("search_issues", {"query": 'crash REPO:"ACME/widgets"'})
        repos = await client.call_tool("search_repositories", {"query": "widgets (for everyone)"})
    assert [r.query["q"] for r in fake.requests] == [
        "API_KEY -repo:acme/secret repo:acme/widgets",
        "crash is:issue repo:ACME/widgets",
        "widgets (for everyone) repo:acme/widgets",
    ]
    assert code.structured_content["items"] == []
    assert [i["number"] for i in issues.structured_content["items"]] == [1, 7]
    assert [r["repo"] for r in repos.structured_content["items"]] == ["acme/widgets"]


async def test_a_search_inside_the_list_counts_only_what_it_shows(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, repos=["acme/widgets"])) as client:
        result = await client.call_tool("search_issues", {"query": "number", "limit": 2})
    first = text_of(result).splitlines()[0]
    assert first == "2 shown for 'number is:issue repo:acme/widgets'; more with next_cursor", first
    assert "43" not in text_of(result)  # GitHub's total counts what the token sees, not what the list allows


async def test_get_me_and_the_instructions_name_the_list(fake: FakeGitHub) -> None:
    server = server_for(fake, repos=["acme/widgets", "octocat/*"])
    async with Client(server, mode="legacy") as client:
        me = await client.call_tool("get_me", {})
        instructions = client.initialize_result.instructions if client.initialize_result else ""
    assert "repositories: acme/widgets, octocat/* only" in text_of(me)
    assert "Only these repositories are reachable: acme/widgets, octocat/*." in (instructions or "")
