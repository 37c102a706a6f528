"""`uv run python bench/github.py`: the GitHub server's context cost and HTTP requests per tool call.

Runs the server in process against the tests' fake GitHub API (packages/mcp-server-github/tests/fake_github.py,
real PyGithub over real HTTP on 127.0.0.1) and measures:
- tools/list bytes with the default toolsets, with all of them, and read-only;
- HTTP requests each common tool call makes (counted by the fake), beside what the obvious PyGithub code for
  the same read costs, since PyGithub's lazy attributes complete objects with one hidden request each;
- median wall time per call on the fake (20 calls; local HTTP, so it measures the server, not GitHub);
- what knowing each caller costs with `--upstream-identity per-user-token`: GitHub requests per token per TTL
  (counted by the fake) and the time of a verdict from the cache.
Writes bench/results-github.md and prints it. Bounded: well under a minute.
"""

from __future__ import annotations

import asyncio
import importlib
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Run as a script, this file's folder comes first on sys.path and this very file would shadow PyGithub's
# `github` package; the bench folder holds no module anyone imports, so it leaves the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.modules.pop("github", None)

github = importlib.import_module("github")
from fastmcp import Client  # noqa: E402 - after the path fix above
from mcp_server_core.testing import module_at, tools_list_bytes  # noqa: E402

FAKE_PATH = HERE.parent / "packages" / "mcp-server-github" / "tests" / "fake_github.py"
REPO = "acme/widgets"
TIMED = 20

fake_github: Any = module_at("fake_github", FAKE_PATH)

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("who am I", "get_me", {}),
    ("list issues (30)", "list_issues", {"repo": REPO}),
    ("issue with 3 comments", "get_issue", {"repo": REPO, "number": 1}),
    ("issue without comments", "get_issue", {"repo": REPO, "number": 2}),
    ("search issues", "search_issues", {"query": "repo:acme/widgets crash"}),
    ("PR with its files", "get_pull_request", {"repo": REPO, "number": 46}),
    ("PR diff, first page", "get_pull_request_diff", {"repo": REPO, "number": 46}),
    ("PR reviews and line comments", "get_pull_request_reviews", {"repo": REPO, "number": 46}),
    ("PR checks and statuses", "get_pull_request_status", {"repo": REPO, "number": 46}),
    ("file contents", "get_file_contents", {"repo": REPO, "path": "src/util.py"}),
    ("repository tree", "get_repository_tree", {"repo": REPO}),
    ("workflow runs", "list_workflow_runs", {"repo": REPO}),
    ("job log tail", "get_job_log", {"repo": REPO, "job_id": 9001}),
]


def naive_pygithub(fake: Any) -> dict[str, int]:
    """The obvious PyGithub code for the same two reads, as its documentation shows it."""
    gh = github.Github(base_url=fake.url, auth=github.Auth.Token(fake_github.TOKEN), seconds_between_requests=None)
    counts: dict[str, int] = {}
    fake.reset_requests()
    repo = gh.get_repo(REPO)
    issue = repo.get_issue(1)
    _ = [(c.user.login, c.user.name, c.body) for c in issue.get_comments()]
    _ = (issue.title, issue.user.name, issue.body)
    counts["issue with 3 comments"] = fake.count()
    fake.reset_requests()
    repo = gh.get_repo(REPO)
    pull = repo.get_pull(46)
    _ = [(f.filename, f.additions) for f in pull.get_files()]
    _ = (pull.title, pull.user.name, pull.head.ref, pull.mergeable)
    counts["PR with its files"] = fake.count()
    gh.close()
    return counts


async def measure() -> str:
    fake = fake_github.FakeGitHub().start()
    try:
        sizes = {
            "default (context, issues)": await tools_list_bytes(fake_github.server_for(fake, toolsets=None)),
            "default, read-only": await tools_list_bytes(fake_github.server_for(fake, toolsets=None, read_only=True)),
            "all six toolsets": await tools_list_bytes(fake_github.server_for(fake)),
            "all six, read-only": await tools_list_bytes(fake_github.server_for(fake, read_only=True)),
        }
        server = fake_github.server_for(fake)
        counts: dict[str, tuple[int, int, float]] = {}
        async with Client(server) as client:
            tools = await client.list_tools()
            for label, name, arguments in CALLS:
                fake.reset_requests()
                result = await client.call_tool_mcp(name, arguments)
                assert not result.is_error, (name, result)
                first = fake.count()
                fake.reset_requests()
                await client.call_tool_mcp(name, arguments)
                repeat_304 = sum(1 for r in fake.requests if "if-none-match" in r.headers)
                times = []
                for _ in range(TIMED):
                    started = time.perf_counter()
                    await client.call_tool_mcp(name, arguments)
                    times.append(time.perf_counter() - started)
                counts[label] = (first, repeat_304, statistics.median(times) * 1000)
        naive = naive_pygithub(fake)
        per_user = await per_user_cost(fake)
    finally:
        fake.stop()

    lines = [
        "# Benchmarks: mcp-server-github",
        "",
        f"`uv run python bench/github.py` on {platform.machine()}, Python {platform.python_version()}, "
        f"{datetime.now(UTC):%Y-%m-%d}. The server runs in process against the tests' fake GitHub API "
        "(real PyGithub, real HTTP on 127.0.0.1); the fake counts every request.",
        "",
        "## Context: tools/list bytes (compact JSON, handshake-era client)",
        "",
        "| toolsets | bytes |",
        "|---|---|",
        *(f"| {k} | {v:,} |" for k, v in sizes.items()),
        "",
        f"Budget for the default toolsets: 9,000 bytes. All toolsets hold {len(tools)} tools. Anchors: the archived "
        "reference server 15,864 bytes for 26 tools; the official Go server about 44,000 for its 43 default tools.",
        "",
        "## HTTP requests per tool call",
        "",
        "| call | tool | requests | of which conditional on a repeat (ETag, 304 costs no rate limit) | median ms |",
        "|---|---|---|---|---|",
        *(
            f"| {label} | `{name}` | {counts[label][0]} | {counts[label][1]} | {counts[label][2]:.1f} |"
            for label, name, _ in CALLS
        ),
        "",
        "The job log is two requests: the API's redirect, then the signed log URL (no token sent), asked for its "
        "last bytes only with a Range header.",
        "",
        "## The same reads written the obvious way with PyGithub",
        "",
        "| read | requests, obvious PyGithub code | requests, this server |",
        "|---|---|---|",
        *(f"| {k} | {v} | {counts[k][0]} |" for k, v in naive.items()),
        "",
        "The obvious code (`repo = gh.get_repo(...)`, `repo.get_issue(n)`, iterate `get_comments()`, read "
        "`comment.user.name`) fetches the repository it never needed and completes each comment's author with one "
        "more request: N+1. This server reads the fields it returns from the JSON GitHub already sent.",
        "",
        "## Per-user identity: what knowing the caller costs",
        "",
        "With `--upstream-identity per-user-token` every bearer is a user's GitHub token, verified by `GET /user` "
        "(the server's own verifier and its PyGithub client for that token, against the fake).",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in per_user.items()),
        "",
    ]
    return "\n".join(lines)


async def per_user_cost(fake: Any) -> dict[str, str]:
    """Tokens × bearers checked, within one TTL and after it; GitHub requests counted by the fake."""
    from mcp_server_core.auth.upstream import UpstreamIdentity, UpstreamTokenVerifier
    from mcp_server_github.client import GitHubApi

    tokens = [fake.add_token(f"ghp_Bench{n:02d}" + "x" * 32, "alice", "repo") for n in range(TOKENS)]
    api = GitHubApi(fake_github.settings_for(fake, token=None, upstream_identity="per-user-token"))
    now = [0.0]

    async def whois(token: str) -> UpstreamIdentity | None:
        return await asyncio.to_thread(api.whois, token)

    verifier = UpstreamTokenVerifier("github", whois, ttl_s=60, clock=lambda: now[0])
    fake.reset_requests()
    for _ in range(CHECKS):
        await asyncio.gather(*(verifier.verify_token(t) for t in tokens))
    within = fake.count()
    times = []
    for _ in range(CHECKS):
        started = time.perf_counter()
        await verifier.verify_token(tokens[0])
        times.append(time.perf_counter() - started)
    now[0] += 61
    fake.reset_requests()
    for _ in range(CHECKS):
        await asyncio.gather(*(verifier.verify_token(t) for t in tokens))
    after = fake.count()
    api.close()
    return {
        f"GitHub requests for {TOKENS} tokens × {CHECKS} bearers each, within one TTL": f"{within}",
        "the same, once the TTL has passed": f"{after}",
        "a verdict from the cache, median": f"{statistics.median(times) * 1e6:.0f} µs",
    }


TOKENS = 8
CHECKS = 50


def main() -> None:
    report = asyncio.run(measure())
    (HERE / "results-github.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
