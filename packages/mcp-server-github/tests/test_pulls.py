"""Pull requests against the fake: files, diffs in pages, reviews, checks, and the writes."""

from __future__ import annotations

from fake_github import FakeGitHub, server_for, text_of
from fastmcp import Client

REPO = "acme/widgets"


async def test_get_pull_request_costs_two_requests_and_lists_the_files(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("get_pull_request", {"repo": REPO, "number": 46})
    assert [r.path for r in fake.requests] == [f"/repos/{REPO}/pulls/46", f"/repos/{REPO}/pulls/46/files"]
    item = result.structured_content["item"]
    assert (item["head"], item["base"], item["author"], item["role"]) == ("acme:feature", "main", "bob", "contributor")
    assert item["mergeable_state"] == "clean"
    assert item["reviewers"] == ["alice"]
    assert [(f["path"], f["status"]) for f in result.structured_content["parts"]] == [
        ("docs/guide.md", "removed"),
        ("src/new.py", "added"),
        ("src/util.py", "modified"),
    ]
    assert "patch" not in str(result.structured_content), "patches belong to get_pull_request_diff"


async def test_the_diff_is_raw_text_paged_at_line_boundaries_and_reassembles(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        whole = (await client.call_tool("get_pull_request_diff", {"repo": REPO, "number": 46})).structured_content
        pages: list[str] = []
        arguments: dict[str, object] = {"repo": REPO, "number": 46, "limit": 150}
        fake.reset_requests()
        while True:
            page = (await client.call_tool("get_pull_request_diff", arguments)).structured_content
            pages.append(page["diff"])
            if "next_cursor" not in page:
                break
            arguments["cursor"] = page["next_cursor"]
    assert fake.requests[0].headers["accept"] == "application/vnd.github.diff"
    assert all("if-none-match" in r.headers for r in fake.requests), "pages after the first are conditional"

    def body(fenced: str) -> str:
        return fenced.split("```text\n", 1)[1].rsplit("\n```", 1)[0]

    assert len(pages) > 3
    assert all(body(p).endswith("\n") for p in pages), "pages end at a line break"
    assert "".join(body(p) for p in pages) == body(whole["diff"])
    assert whole["diff"].count("diff --git") == 3


async def test_the_diff_of_one_file(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        one = await client.call_tool("get_pull_request_diff", {"repo": REPO, "number": 46, "file": "src/util.py"})
        none = await client.call_tool("get_pull_request_diff", {"repo": REPO, "number": 46, "file": "README.md"})
    diff = one.structured_content["diff"]
    assert diff.count("diff --git") == 1
    assert "+def mul(a, b):" in diff
    assert none.structured_content["diff"] == "No change to README.md in diff of acme/widgets#46."


async def test_reviews_and_line_comments_come_fenced_with_their_authors(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("get_pull_request_reviews", {"repo": REPO, "number": 46, "limit": 2})
        assert fake.count() == 2
        more = await client.call_tool(
            "get_pull_request_reviews", {"repo": REPO, "number": 46, "cursor": result.structured_content["next_cursor"]}
        )
    reviews = result.structured_content["item"]["reviews"]
    assert [(r["state"], r["author"], r["role"]) for r in reviews] == [("CHANGES_REQUESTED", "alice", "owner")]
    assert [c["body"] for c in result.structured_content["parts"]] == ["Nit 0.", "Nit 1."]
    assert [c["body"] for c in more.structured_content["parts"]] == ["Nit 2."]
    assert "[untrusted data: review 80 on acme/widgets#46 by alice (owner)" in text_of(result)


async def test_status_combines_statuses_and_check_runs_of_the_head(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("get_pull_request_status", {"repo": REPO, "number": 46})
    assert fake.count() == 3
    head = fake.repos[REPO].branches["feature"]
    assert fake.requests[1].path == f"/repos/{REPO}/commits/{head}/status"
    assert result.structured_content["item"] == {
        "sha": head,
        "overall": "failing",
        "failing": 1,
        "pending": 1,
        "total": 3,
    }
    assert "failure test (3.11)" in text_of(result)


async def test_open_review_and_merge_a_pull_request(fake: FakeGitHub) -> None:
    repo = fake.repos[REPO]
    async with Client(server_for(fake)) as client:
        opened = await client.call_tool(
            "create_pull_request", {"repo": REPO, "title": "Mul", "head": "acme:feature", "base": "main", "draft": True}
        )
        number = max(repo.pulls)
        assert text_of(opened) == f"Opened {REPO}#{number}: https://github.com/{REPO}/pull/{number}"
        await client.call_tool(
            "review_pull_request",
            {
                "repo": REPO,
                "number": number,
                "event": "COMMENT",
                "comments": [{"path": "src/util.py", "line": 2, "body": "Why swap?"}],
            },
        )
        head = repo.branches["feature"]
        merged = await client.call_tool(
            "merge_pull_request", {"repo": REPO, "number": number, "method": "squash", "sha": head}
        )
        again = await client.call_tool_mcp("merge_pull_request", {"repo": REPO, "number": number})
    assert repo.pulls[number]["draft"] is True
    assert repo.pulls[number]["merged"] is True
    assert repo.review_comments[number][0]["body"] == "Why swap?"
    assert text_of(merged) == f"Merged {REPO}#{number} by squash: {repo.branches['main']}"
    assert again.is_error
    assert "Pull Request is not mergeable" in text_of(again)
    merge = next(r for r in fake.requests if r.path.endswith("/merge"))
    assert merge.body == {"merge_method": "squash", "sha": head}


async def test_a_rejected_pull_request_names_the_field(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        result = await client.call_tool_mcp(
            "create_pull_request", {"repo": REPO, "title": "t", "head": "no-such-branch", "base": "main"}
        )
    assert result.is_error
    assert text_of(result) == (
        "GitHub rejected opening a pull request in acme/widgets: Validation Failed (PullRequest head invalid). "
        "Fix the arguments named above and retry."
    )


async def test_update_pull_request_closes_it(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("update_pull_request", {"repo": REPO, "number": 46, "state": "closed"})
    assert fake.repos[REPO].issues[46]["state"] == "closed"
    assert "it is closed" in text_of(result)
