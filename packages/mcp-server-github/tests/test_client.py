"""The API door: rate limits, one bounded retry, error messages, ETags, the token kept out of every message."""

from __future__ import annotations

import contextlib
import logging
import re
import time

import pytest
from fake_github import TOKEN, FakeGitHub, server_for, text_of
from fastmcp import Client
from mcp_server_core.testing import free_port

REPO = "acme/widgets"
GET_ISSUE = ("get_issue", {"repo": REPO, "number": 2})


@pytest.mark.parametrize("status", [403, 429])
async def test_the_primary_rate_limit_says_when_it_resets_and_is_not_retried(fake: FakeGitHub, status: int) -> None:
    fake.primary_limited, fake.primary_status = True, status
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        started = time.monotonic()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert time.monotonic() - started < 1.5, "a reset half an hour away must not be waited for"
    assert result.is_error
    text = text_of(result)
    assert "rate limit of 5000 requests an hour is used up; it resets at" in text
    assert " UTC" in text
    assert "Retry after 180" in text
    assert fake.count() == 1


async def test_a_short_secondary_rate_limit_is_retried_once_after_retry_after(fake: FakeGitHub) -> None:
    fake.secondary_limited, fake.retry_after = 1, 1
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        started = time.monotonic()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert not result.is_error, text_of(result)
    assert time.monotonic() - started >= 1.0
    assert fake.count() == 2


@pytest.mark.parametrize(
    ("limited_times", "retry_after", "requests"),
    [
        pytest.param(10, 1, 2, id="persists-after-one-retry"),
        pytest.param(1, 60, 1, id="wait-too-long-to-retry"),
    ],
)
async def test_a_secondary_rate_limit_that_one_short_retry_does_not_clear_fails_with_the_wait(
    fake: FakeGitHub, limited_times: int, retry_after: int, requests: int
) -> None:
    fake.secondary_limited, fake.retry_after = limited_times, retry_after
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert "secondary rate limit" in text_of(result)
    assert f"Retry after {retry_after} s, one request at a time." in text_of(result)
    assert fake.count() == requests, "one retry at most, never a loop"


async def test_a_server_error_on_a_read_is_retried_once(fake: FakeGitHub) -> None:
    fake.fail(r"/issues/2$", 502, times=1)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert not result.is_error, text_of(result)
    assert fake.count() == 2


async def test_a_server_error_on_a_write_is_not_retried(fake: FakeGitHub) -> None:
    fake.fail(r"/issues/2/comments$", 502, times=1)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("add_issue_comment", {"repo": REPO, "number": 2, "body": "hi"})
    assert result.is_error
    assert text_of(result) == "GitHub failed on commenting on acme/widgets#2 (HTTP 502). Retry in a minute."
    assert fake.count() == 1
    assert fake.repos[REPO].comments[2] == []


async def test_a_bad_token_says_what_to_do_without_showing_the_token(fake: FakeGitHub) -> None:
    wrong = "ghp_WrongToken9876543210zyxwvutsrqponmlkji"
    async with Client(server_for(fake, token=wrong)) as client:
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert text_of(result) == (
        "GitHub rejected the credentials (Bad credentials). "
        "Set GITHUB_TOKEN to a valid token and restart the server; retrying will not help."
    )
    assert fake.requests[-1].headers["authorization"] == f"token {wrong}"


async def test_the_token_never_reaches_a_log_line(fake: FakeGitHub, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with Client(server_for(fake)) as client:
        await client.call_tool_mcp(*GET_ISSUE)
        await client.call_tool_mcp("get_issue", {"repo": REPO, "number": 999})
        fake.primary_limited = True
        await client.call_tool_mcp(*GET_ISSUE)
    assert caplog.records, "PyGithub logs every request at DEBUG"
    assert all(TOKEN not in record.getMessage() for record in caplog.records)
    assert TOKEN not in caplog.text


async def test_a_repeated_read_is_a_conditional_request_answered_304(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        first = await client.call_tool("get_issue", {"repo": REPO, "number": 2})
        fake.reset_requests()
        second = await client.call_tool("get_issue", {"repo": REPO, "number": 2})
    assert fake.requests[0].headers.get("if-none-match", "").startswith('W/"')
    assert second.structured_content == first.structured_content


async def test_a_changed_resource_is_read_afresh_despite_the_etag(fake: FakeGitHub) -> None:
    async with Client(server_for(fake)) as client:
        await client.call_tool("get_issue", {"repo": REPO, "number": 2})
        fake.repos[REPO].issues[2]["body"] = "Edited on GitHub."
        second = await client.call_tool("get_issue", {"repo": REPO, "number": 2})
    assert second.structured_content["item"]["body"] == "Edited on GitHub."


async def test_an_unreachable_github_is_unavailable_and_names_the_url(fake: FakeGitHub) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there: connections are refused
    async with Client(server_for(fake, api_url=url)) as client:
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert text_of(result).startswith(f"Cannot reach GitHub at {url} (ConnectionError).")


async def test_anonymous_use_reads_public_data_and_sees_no_private_repository(fake: FakeGitHub) -> None:
    async with Client(server_for(fake, token=None)) as client:
        public = await client.call_tool_mcp(*GET_ISSUE)
        private = await client.call_tool_mcp("list_issues", {"repo": "acme/secret"})
        me = await client.call_tool("get_me", {})
    assert not public.is_error
    assert private.is_error
    assert "not found (or the token cannot see it" in text_of(private)
    assert "Not authenticated" in text_of(me)
    assert all("authorization" not in r.headers for r in fake.requests)


async def test_enterprise_server_lives_under_api_v3_and_pages_there() -> None:
    with contextlib.closing(FakeGitHub(prefix="/api/v3").start()) as ghes:
        async with Client(server_for(ghes)) as client:
            first = await client.call_tool("list_issues", {"repo": REPO, "limit": 40})
            rest = await client.call_tool(
                "list_issues", {"repo": REPO, "limit": 40, "cursor": first.structured_content["next_cursor"]}
            )
            issue = await client.call_tool("get_issue", {"repo": REPO, "number": 1})
    numbers = [i["number"] for i in first.structured_content["items"] + rest.structured_content["items"]]
    assert sorted(numbers) == list(range(1, 47))
    assert issue.structured_content["item"]["comments"] == 3
    assert ghes.count() == 4, "every request reached /api/v3 (the fake answers 404 elsewhere)"


@pytest.mark.parametrize("status", [403, 429])
async def test_a_secondary_limit_is_recognised_as_403_or_429(fake: FakeGitHub, status: int) -> None:
    fake.secondary_limited, fake.retry_after, fake.secondary_status = 1, 120, status
    async with Client(server_for(fake)) as client:
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert text_of(result) == (
        "GitHub's secondary rate limit stopped issue acme/widgets#2: too many requests too quickly. "
        "Retry after 120 s, one request at a time."
    )


async def test_a_secondary_limit_without_retry_after_waits_a_minute(fake: FakeGitHub) -> None:
    fake.secondary_limited, fake.retry_after = 1, None  # GitHub's advice then: wait at least a minute
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert "secondary rate limit" in text_of(result)
    assert "Retry after 60 s, one request at a time." in text_of(result)
    assert fake.count() == 1


async def test_a_secondary_limit_with_remaining_zero_waits_for_the_reset(fake: FakeGitHub) -> None:
    fake.secondary_limited, fake.retry_after, fake.secondary_reset_in = 1, None, 600
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    text = text_of(result)
    assert "GitHub's secondary rate limit stopped issue acme/widgets#2" in text
    assert re.search(r"Retry after 60\d s, one request at a time\.", text), text
    assert "requests an hour is used up" not in text
    assert fake.count() == 1


async def test_a_persistent_server_error_fails_after_one_retry(fake: FakeGitHub) -> None:
    fake.fail(r"/issues/2$", 503, times=5)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert text_of(result) == "GitHub failed on issue acme/widgets#2 (HTTP 503). Retry in a minute."
    assert fake.count() == 2


# --- redirects: a renamed or transferred repository, as GitHub documents its answers -------------------------


async def test_a_read_of_a_renamed_repository_follows_the_301_with_its_filters_and_page(fake: FakeGitHub) -> None:
    fake.rename(REPO, "acme/gadgets")
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("list_issues", {"repo": REPO, "labels": ["bug"], "limit": 5})
    assert [i["number"] for i in result.structured_content["items"]] == [1]
    followed = fake.requests[-1]
    assert followed.path == "/repos/acme/gadgets/issues"
    assert (followed.query["labels"], followed.query["per_page"]) == ("bug", "5")


async def test_a_write_answered_307_is_sent_again_once_at_the_new_location(fake: FakeGitHub) -> None:
    gadgets = fake.rename(REPO, "acme/gadgets")
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        created = await client.call_tool("create_issue", {"repo": REPO, "title": "Moved along", "body": "b"})
        comment = await client.call_tool("add_issue_comment", {"repo": REPO, "number": 2, "body": "still here"})
    assert "#47" in text_of(created)
    assert gadgets.issues[47]["title"] == "Moved along"
    assert [c["body"] for c in gadgets.comments[2]] == ["still here"]
    assert "acme/gadgets/issues/2#issuecomment" in text_of(comment)
    writes = [(r.method, r.path, r.body) for r in fake.requests if r.method != "GET"]
    assert writes[:2] == [
        ("POST", f"/repos/{REPO}/issues", {"title": "Moved along", "body": "b"}),
        ("POST", "/repos/acme/gadgets/issues", {"title": "Moved along", "body": "b"}),
    ]


async def test_a_write_redirected_outside_the_allow_list_is_refused_and_nothing_is_written(fake: FakeGitHub) -> None:
    fake.rename(REPO, "mallory/gadgets")
    async with Client(server_for(fake, repos=[REPO])) as client:
        before = fake.snapshot()
        fake.reset_requests()
        result = await client.call_tool_mcp("update_issue", {"repo": REPO, "number": 2, "state": "closed"})
    assert result.is_error
    assert text_of(result).startswith(
        "acme/widgets has moved to mallory/gadgets, outside this server's allow-list (acme/widgets);"
        " nothing was sent there."
    )
    assert fake.snapshot() == before
    assert not any("gadgets" in r.path for r in fake.requests if r.method != "GET")


@pytest.mark.parametrize(
    ("tool", "arguments", "path"),
    [
        pytest.param("merge_pull_request", {"repo": REPO, "number": 46}, r"/pulls/46/merge$", id="merge-pull-request"),
        pytest.param(
            "create_branch", {"repo": REPO, "branch": "feature-x", "from_ref": "main"}, r"/git/refs$", id="branch"
        ),
        pytest.param(
            "create_pull_request",
            {"repo": REPO, "title": "t", "head": "feature", "base": "main"},
            r"/pulls$",
            id="create-pull-request",
        ),
    ],
)
async def test_a_write_redirected_again_is_reported_as_not_done(
    fake: FakeGitHub, tool: str, arguments: dict[str, object], path: str
) -> None:
    fake.redirect(path, 307, f"/repos/acme/gadgets/{path.strip('/$')}")
    fake.redirect(path, 308, f"/repos/acme/gadgets/{path.strip('/$')}")
    async with Client(server_for(fake)) as client:
        before = fake.snapshot()
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    assert "acme/widgets has moved to acme/gadgets;" in text_of(result)
    assert "was not done. Use the new name acme/gadgets and retry." in text_of(result)
    assert fake.snapshot() == before


async def test_a_write_answered_with_a_302_is_not_repeated_and_not_reported_done(fake: FakeGitHub) -> None:
    fake.redirect(r"/issues/2/comments$", 302, "/repos/acme/gadgets/issues/2/comments")
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("add_issue_comment", {"repo": REPO, "number": 2, "body": "hi"})
    assert result.is_error
    assert text_of(result) == (
        "acme/widgets has moved to acme/gadgets; commenting on acme/widgets#2 was not done."
        " Use the new name acme/gadgets and retry."
    )
    assert fake.count("POST") == 1
    assert fake.repos[REPO].comments[2] == []


async def test_file_contents_answered_302_within_the_api_are_followed_with_the_ref(fake: FakeGitHub) -> None:
    fake.redirect(r"/contents/README.md$", 302, f"/repos/{REPO}/contents/docs/guide.md")
    async with Client(server_for(fake)) as client:
        result = await client.call_tool("get_file_contents", {"repo": REPO, "path": "README.md", "ref": "v1.0"})
    assert result.structured_content["content"].startswith("# Guide")
    assert fake.requests[-1].query == {"ref": "v1.0"}


async def test_file_contents_answered_302_to_another_host_say_why_they_are_not_read(fake: FakeGitHub) -> None:
    fake.redirect(r"/contents/README.md$", 302, "https://storage.example.com/blob/README.md?sig=s3cr3t")
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("get_file_contents", {"repo": REPO, "path": "README.md"})
    assert result.is_error
    text = text_of(result)
    assert "a redirect to storage.example.com outside its API; it was not followed" in text
    assert "s3cr3t" not in text
    assert "thing" not in text
    assert fake.count() == 1


async def test_a_redirect_to_a_repository_github_will_not_name_is_not_followed_under_an_allow_list(
    fake: FakeGitHub,
) -> None:
    fake.redirect(r"/issues$", 301, "/repositories/999999/issues")
    async with Client(server_for(fake, repos=[REPO])) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("list_issues", {"repo": REPO})
    assert result.is_error
    assert text_of(result).startswith("GitHub redirected issues of acme/widgets to repository id 999999 and would not")
    assert [r.path for r in fake.requests] == [f"/repos/{REPO}/issues", "/repositories/999999"]


async def test_a_write_redirected_without_a_location_header_follows_the_url_in_its_body(fake: FakeGitHub) -> None:
    gadgets = fake.rename(REPO, "acme/gadgets")
    fake.redirect(r"/issues/2/comments$", 307, f"/repositories/{gadgets.rid}/issues/2/comments", header=False)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("add_issue_comment", {"repo": REPO, "number": 2, "body": "found it"})
    assert "acme/gadgets/issues/2#issuecomment" in text_of(result)
    assert [c["body"] for c in gadgets.comments[2]] == ["found it"]
    assert [(r.method, r.path) for r in fake.requests] == [
        ("POST", f"/repos/{REPO}/issues/2/comments"),
        ("GET", f"/repositories/{gadgets.rid}"),
        ("POST", "/repos/acme/gadgets/issues/2/comments"),
    ]


async def test_a_redirect_that_says_nowhere_is_explained_and_nothing_is_written(fake: FakeGitHub) -> None:
    fake.redirect(r"/issues/2/comments$", 307, "/repos/acme/gadgets/issues/2/comments", header=False, body=False)
    async with Client(server_for(fake)) as client:
        before = fake.snapshot()
        fake.reset_requests()
        result = await client.call_tool_mcp("add_issue_comment", {"repo": REPO, "number": 2, "body": "hi"})
    assert result.is_error
    assert text_of(result) == (
        "GitHub answered commenting on acme/widgets#2 with HTTP 307 (moved) without saying where; nothing was"
        " written. Find the new name of acme/widgets (search_repositories) and use it."
    )
    assert [(r.method, r.path) for r in fake.requests] == [("POST", f"/repos/{REPO}/issues/2/comments")]
    assert fake.snapshot() == before


@pytest.mark.parametrize(
    "repos", [pytest.param([], id="no-allow-list"), pytest.param([REPO, "acme/gadgets"], id="new-name-listed")]
)
async def test_a_redirect_to_a_repository_id_is_followed_under_its_new_name(fake: FakeGitHub, repos: list[str]) -> None:
    gadgets = fake.rename(REPO, "acme/gadgets")
    async with Client(server_for(fake, repos=repos)) as client:
        fake.reset_requests()
        result = await client.call_tool("list_issues", {"repo": REPO, "labels": ["bug"], "limit": 5})
    assert [i["number"] for i in result.structured_content["items"]] == [1]
    assert [r.path for r in fake.requests] == [
        f"/repos/{REPO}/issues",
        f"/repositories/{gadgets.rid}",
        "/repos/acme/gadgets/issues",
    ]
    assert fake.requests[0].query == fake.requests[2].query


async def test_a_redirect_to_a_repository_id_is_refused_when_its_new_name_is_not_listed(fake: FakeGitHub) -> None:
    gadgets = fake.rename(REPO, "acme/gadgets")
    async with Client(server_for(fake, repos=[REPO])) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("list_issues", {"repo": REPO, "labels": ["bug"]})
    assert result.is_error
    assert text_of(result).startswith(
        "acme/widgets has moved to acme/gadgets, outside this server's allow-list (acme/widgets);"
        " nothing was sent there."
    )
    # Only the question of what the id is called reached GitHub; nothing was asked of the repository itself.
    assert [r.path for r in fake.requests] == [f"/repos/{REPO}/issues", f"/repositories/{gadgets.rid}"]


async def test_a_search_answered_301_is_followed_with_its_query(fake: FakeGitHub) -> None:
    fake.redirect(r"^/search/issues$", 301, "/search/issues", query=False)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool("search_issues", {"query": f"repo:{REPO} crash", "limit": 1})
    asked, followed = fake.requests
    assert asked.query == followed.query == {"q": f"repo:{REPO} crash is:issue", "per_page": "1"}
    assert [i["number"] for i in result.structured_content["items"]] == [1]
    assert result.structured_content["next_cursor"]


async def test_a_search_redirected_to_a_wider_query_is_refused_under_an_allow_list(fake: FakeGitHub) -> None:
    fake.redirect(r"^/search/issues$", 301, "/search/issues?q=crash+is%3Aissue", query=False)
    async with Client(server_for(fake, repos=[REPO])) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("search_issues", {"query": "crash"})
    assert result.is_error
    assert "This search is not narrowed to the allow-list." in text_of(result)
    assert [r.query["q"] for r in fake.requests] == [f"crash is:issue repo:{REPO}"]


@pytest.mark.parametrize(
    ("tool", "arguments", "path", "field", "what"),
    [
        pytest.param(
            "create_issue",
            {"repo": REPO, "title": "Half answered"},
            r"/issues$",
            "number",
            "creating an issue in acme/widgets",
            id="create-issue",
        ),
        pytest.param(
            "merge_pull_request", {"repo": REPO, "number": 46}, r"/merge$", "sha", "merging acme/widgets#46", id="merge"
        ),
    ],
)
async def test_a_success_answer_lacking_a_documented_field_says_the_write_may_be_applied(
    fake: FakeGitHub, tool: str, arguments: dict[str, object], path: str, field: str, what: str
) -> None:
    fake.omit(path, field)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    assert text_of(result) == (
        f"GitHub's answer to {what} lacks {field}; it may have been applied all the same."
        " Check the current state before retrying, so nothing is done twice."
    )
    # GitHub did apply it, once: the server neither resent the write nor claimed it done.
    assert [r.method for r in fake.requests if r.method != "GET"] == ["POST" if tool == "create_issue" else "PUT"]
    widgets = fake.repos[REPO]
    if tool == "create_issue":
        assert widgets.issues[47]["title"] == "Half answered"
    else:
        assert widgets.pulls[46]["merged"]


async def test_a_followed_rename_is_said_once_in_the_tools_text(fake: FakeGitHub) -> None:
    gadgets = fake.rename(REPO, "acme/gadgets")
    note = "(acme/widgets has moved to acme/gadgets)\n"
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        # Two requests (the issue, its comments), each redirected: the answer says it once.
        issue = await client.call_tool("get_issue", {"repo": REPO, "number": 1})
        comment = await client.call_tool("add_issue_comment", {"repo": REPO, "number": 2, "body": "moved?"})
        diff = await client.call_tool("get_pull_request_diff", {"repo": REPO, "number": 46})
        fake.reset_requests()
        unmoved = await client.call_tool("list_issues", {"repo": "acme/gadgets", "limit": 1})
    for result in (issue, comment, diff):
        assert text_of(result).startswith(note)
        assert text_of(result).count("has moved") == 1
    assert "Crash on start" in text_of(issue)
    assert [c["body"] for c in gadgets.comments[2]] == ["moved?"]
    assert "has moved" not in text_of(unmoved)
    assert [r.path for r in fake.requests] == ["/repos/acme/gadgets/issues"]


@pytest.mark.parametrize(
    ("tool", "arguments", "path"),
    [
        ("add_issue_comment", {"repo": REPO, "number": 2, "body": "Fixed in v2"}, r"/issues/2/comments$"),
        ("create_issue", {"repo": REPO, "title": "Crash on save"}, r"/issues$"),
    ],
)
async def test_a_write_whose_answer_is_lost_is_sent_once_and_says_to_check(
    fake: FakeGitHub, tool: str, arguments: dict[str, object], path: str
) -> None:
    # GitHub did the write and the connection dropped before its answer: "cannot reach, retry" would do it twice.
    fake.drop("POST", path)
    repo = fake.repos[REPO]
    before = (len(repo.issues), len(repo.comments[2]))
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    text = text_of(result)
    assert "may have been done" in text
    assert "before you retry" in text
    assert "Cannot reach" not in text
    assert fake.count() == 1
    assert (len(repo.issues), len(repo.comments[2])) == (
        before[0] + (tool == "create_issue"),
        before[1] + (tool == "add_issue_comment"),
    )


async def test_a_read_whose_answer_is_lost_is_asked_once_more(fake: FakeGitHub) -> None:
    # Issue 28: BoundedRetry(read=0), there for writes, kept a dropped GET from its one retry.
    fake.drop("GET", r"/issues/2$")
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert not result.is_error, text_of(result)
    assert [r.path for r in fake.requests] == ["/repos/acme/widgets/issues/2"] * 2


async def test_a_read_whose_answer_is_lost_twice_says_github_could_not_be_reached(fake: FakeGitHub) -> None:
    fake.drop("GET", r"/issues/2$")
    fake.drop("GET", r"/issues/2$")
    fake.drop("GET", r"/issues/2$")
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp(*GET_ISSUE)
    assert result.is_error
    assert "may have been done" not in text_of(result)
    assert text_of(result).startswith("Cannot reach GitHub")
    assert fake.count() == 2, "one retry at most"


async def test_a_write_whose_answer_does_not_come_in_time_says_to_check(fake: FakeGitHub) -> None:
    fake.hold("POST", r"/issues$", 3.0)  # GitHub made the issue; its answer comes after the 1 s timeout
    async with Client(server_for(fake, timeout_s=1)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("create_issue", {"repo": REPO, "title": "Crash on save"})
    assert result.is_error
    assert text_of(result).startswith(
        "GitHub did not answer creating an issue in acme/widgets within 1 s; it may have been done."
    )
    assert fake.count() == 1


CAPTIVE_PORTAL = b"<!doctype html><html><head><title>Sign in to Hotel Wi-Fi</title></head><body>Accept</body></html>"
ISSUE_1 = ("get_issue", {"repo": REPO, "number": 1}, r"/issues/1$")
ISSUES = ("list_issues", {"repo": REPO}, r"/issues$")


@pytest.mark.parametrize(
    ("tool", "arguments", "path", "answer", "found"),
    [
        pytest.param(*ISSUE_1, {"cut": 700}, "JSON cut short or malformed", id="cut-json"),
        pytest.param(*ISSUE_1, {"body": CAPTIVE_PORTAL, "content_type": "text/html"}, "an HTML page", id="html"),
        pytest.param(*ISSUE_1, {"body": b"[]"}, "a list where an object belongs", id="list-for-an-object"),
        pytest.param(*ISSUES, {"body": CAPTIVE_PORTAL, "content_type": "text/html"}, "an HTML page", id="list-html"),
        pytest.param(*ISSUES, {"body": b'"issues"'}, "a bare string", id="bare-string"),
        pytest.param(*ISSUES, {"body": b""}, "an empty body", id="empty"),
        pytest.param(*ISSUES, {"body": b"{}"}, "an object where a list belongs", id="object-for-a-list"),
        pytest.param(
            "search_issues", {"query": "crash"}, r"/search/issues$", {"body": b'{"total_count": 3}'}, "no items list"
        ),
        pytest.param(
            "get_pull_request_diff",
            {"repo": REPO, "number": 46},
            r"/pulls/46$",
            {"body": CAPTIVE_PORTAL, "content_type": "text/html"},
            "an HTML page where GitHub sends application/vnd.github.diff",
            id="diff-html",
        ),
    ],
)
async def test_a_200_that_is_not_githubs_json_is_a_retryable_error(
    fake: FakeGitHub, tool: str, arguments: dict[str, object], path: str, answer: dict[str, object], found: str
) -> None:
    # Issue 28: "Nothing found." for a portal's page, "acme/widgets#1 unknown, opened by ghost" for cut JSON.
    fake.garble("GET", path, **answer)  # type: ignore[arg-type]
    async with Client(server_for(fake)) as client:
        result = await client.call_tool_mcp(tool, arguments)
        again = await client.call_tool_mcp(tool, arguments)
    assert result.is_error
    assert f"was not what GitHub sends ({found}); a proxy or a network sign-in page" in text_of(result)
    assert text_of(result).endswith("Retry shortly; if it persists, check the network or GITHUB_API_URL.")
    assert not again.is_error, text_of(again)


async def test_a_write_answered_with_a_portal_page_says_it_may_have_been_done(fake: FakeGitHub) -> None:
    fake.garble("POST", r"/issues$", body=CAPTIVE_PORTAL, content_type="text/html; charset=utf-8")
    before = len(fake.repos[REPO].issues)
    async with Client(server_for(fake)) as client:
        fake.reset_requests()
        result = await client.call_tool_mcp("create_issue", {"repo": REPO, "title": "Crash on save"})
    assert result.is_error
    assert "(an HTML page)" in text_of(result)
    assert "it may have been done. Read it back" in text_of(result)
    assert fake.count("POST") == 1
    assert len(fake.repos[REPO].issues) == before + 1  # it was done, once, and not reported as done


async def test_an_error_quoting_the_start_of_the_token_shows_none_of_it(fake: FakeGitHub) -> None:
    # Issue 28: the ghp_ shape wants 20 characters after the prefix, so a 409 quoting TOKEN[:20] kept 16 of them.
    fake.fail(r"/issues/2/comments$", 409, message=f"Conflict for credential {TOKEN[:20]}")
    async with Client(server_for(fake)) as client:
        result = await client.call_tool_mcp("add_issue_comment", {"repo": REPO, "number": 2, "body": "hi"})
    assert result.is_error
    assert text_of(result).startswith("GitHub refused commenting on acme/widgets#2: Conflict for credential ***.")
    assert TOKEN[4:12] not in text_of(result)
