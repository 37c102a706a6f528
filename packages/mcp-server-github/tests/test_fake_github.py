"""The fake against GitHub's published REST description: every JSON answer it sent in this test run must match
the response schema GitHub documents for that path, method and status, so the fake cannot drift from the API.

The description comes from npm (`@octokit/openapi`, installed in tests/openapi by `npm ci`); without it this
check is skipped, saying so. It runs after every other test of the package (see conftest.py) and drives a sweep
of its own first, so it also means something when run alone.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from fake_github import SENT, FakeGitHub, Sent, server_for
from fastmcp import Client
from jsonschema import Draft4Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

DESCRIPTION = Path(__file__).parent / "openapi/node_modules/@octokit/openapi/generated/api.github.com.json"
BASE = "urn:api.github.com"
# Real endpoints GitHub's description leaves out; each says why the fake serves it.
UNDOCUMENTED = {
    # A renamed repository's redirect names it by id; GitHub answers this path with the repository.
    ("GET", re.compile(r"/repositories/\d+")),
}
# A value that may hold slashes: a file path, a ref such as heads/feature/x, base...head.
_SLASHED = {"path", "ref", "basehead"}
REPO = "acme/widgets"


@cache
def description(complete: bool = True) -> dict[str, Any]:
    return _as_json_schema(json.loads(DESCRIPTION.read_text()), complete)


def _as_json_schema(node: Any, complete: bool) -> Any:
    """OpenAPI 3.0's schema dialect as JSON Schema draft 4: `nullable: true` becomes a null alternative.

    `complete=False` lets an object leave out fields (the fake is trimmed to what a client reads), so `oneOf`
    becomes `anyOf`: alternatives that differ only in their required fields would all match."""
    if isinstance(node, list):
        return [_as_json_schema(item, complete) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _as_json_schema(value, complete) for key, value in node.items()}
    if not complete:
        if isinstance(out.get("required"), list):
            del out["required"]
        if "oneOf" in out:
            out["anyOf"] = out.pop("oneOf")
    if out.pop("nullable", False) is True:
        if isinstance(out.get("type"), str) and "enum" not in out:
            out["type"] = [out["type"], "null"]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    out.pop("discriminator", None)  # only a hint for code generators; oneOf says the same
    return out


@cache
def _templates() -> list[tuple[re.Pattern[str], str, int]]:
    compiled = []
    for template in description()["paths"]:
        pattern = re.sub(
            r"\\{(\w+)\\}",
            lambda m: "(.*)" if m[1] == "path" else "(.+)" if m[1] in _SLASHED else "([^/]+)",
            re.escape(template),
        )
        literal = len(re.sub(r"\{\w+\}", "", template))
        # DOTALL: a file path or a ref may hold a newline (the hostile suite sends some), as the fake's routes allow.
        compiled.append((re.compile(pattern, re.DOTALL), template, literal))
    return compiled


def template_of(path: str) -> str | None:
    """The description's path template for a concrete path: the most literal of those that match."""
    matches = [(literal, template) for pattern, template, literal in _templates() if pattern.fullmatch(path)]
    if not matches and path.endswith("/contents"):
        return template_of(path + "/")  # the root directory: GitHub's {path} left empty, slash and all
    return max(matches)[1] if matches else None


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = description()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


@cache
def _registry(complete: bool) -> Registry:
    contents = description(complete)
    return Registry().with_resource(BASE, Resource.from_contents(contents, default_specification=DRAFT4))


def problems_with(sent: Sent, complete: bool) -> list[str]:
    """What in one answer GitHub's description says is wrong (empty when it conforms or is not JSON)."""
    if any(sent.method == method and path.fullmatch(sent.path) for method, path in UNDOCUMENTED):
        return []
    where = f"{sent.method} {sent.path} -> {sent.status}"
    template = template_of(sent.path)
    if template is None or sent.method.lower() not in description()["paths"][template]:
        return [f"{where}: no such operation in GitHub's description"]
    operation = description()["paths"][template][sent.method.lower()]
    documented = operation["responses"].get(str(sent.status))
    if documented is None:
        # GitHub documents general answers (401, rate limits, 5xx) once for all operations, not per operation.
        return [f"{where}: status not documented for {template}"] if sent.status < 300 else []
    if not sent.body or "json" not in sent.content_type:
        return []
    content = _resolve(documented).get("content") or {}
    media = content.get("application/json") or next((v for k, v in content.items() if "json" in k), None)
    if media is None or "schema" not in media:
        return []
    pointer = json.dumps(template)[1:-1].replace("~", "~0").replace("/", "~1")
    status_key = str(sent.status) if "$ref" not in documented else None
    if status_key is None:
        schema_ref = documented["$ref"] + "/content/" + _media_key(content, media) + "/schema"
    else:
        schema_ref = (
            f"#/paths/{pointer}/{sent.method.lower()}/responses/{status_key}/content/"
            + _media_key(content, media)
            + "/schema"
        )
    validator = Draft4Validator({"$ref": BASE + schema_ref}, registry=_registry(complete))
    errors = sorted(validator.iter_errors(json.loads(sent.body)), key=lambda e: list(e.absolute_path))
    return [f"{where} ({template}) at /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5]]


def _media_key(content: dict[str, Any], media: dict[str, Any]) -> str:
    key = next(k for k, v in content.items() if v is media)
    return key.replace("~", "~0").replace("/", "~1")


async def _sweep(fake: FakeGitHub) -> None:
    """Every tool once, a rename and a few failures, so the fake's answers are here even when run alone."""
    async with Client(server_for(fake)) as client:
        for tool, arguments in [
            ("get_me", {}),
            ("list_issues", {"repo": REPO, "state": "all", "limit": 5}),
            ("get_issue", {"repo": REPO, "number": 1}),
            ("get_issue", {"repo": REPO, "number": 999}),
            ("list_labels", {"repo": REPO}),
            ("search_issues", {"query": f"repo:{REPO} crash"}),
            ("list_pull_requests", {"repo": REPO, "state": "all"}),
            ("get_pull_request", {"repo": REPO, "number": 46}),
            ("get_pull_request_diff", {"repo": REPO, "number": 46}),
            ("get_pull_request_reviews", {"repo": REPO, "number": 46}),
            ("get_pull_request_status", {"repo": REPO, "number": 46}),
            ("get_file_contents", {"repo": REPO, "path": "README.md"}),
            ("get_file_contents", {"repo": REPO, "path": "src"}),
            ("get_repository_tree", {"repo": REPO}),
            ("list_branches", {"repo": REPO}),
            ("list_tags", {"repo": REPO}),
            ("list_commits", {"repo": REPO}),
            ("get_commit", {"repo": REPO, "sha": "feature"}),
            ("compare_commits", {"repo": REPO, "base": "main", "head": "feature"}),
            ("list_releases", {"repo": REPO}),
            ("list_workflow_runs", {"repo": REPO}),
            ("list_workflow_jobs", {"repo": REPO, "run_id": 700}),
            ("get_job_log", {"repo": REPO, "job_id": 9001}),
            ("search_code", {"query": f"widgets repo:{REPO}"}),
            ("search_repositories", {"query": "widgets"}),
            ("search_users", {"query": "alice"}),
            ("create_issue", {"repo": REPO, "title": "New"}),
            ("create_issue", {"repo": REPO, "title": ""}),
            ("update_issue", {"repo": REPO, "number": 2, "state": "closed"}),
            ("add_issue_comment", {"repo": REPO, "number": 2, "body": "hi"}),
            ("create_branch", {"repo": REPO, "branch": "topic"}),
            ("create_or_update_file", {"repo": REPO, "path": "n.txt", "content": "n", "message": "m"}),
            ("push_files", {"repo": REPO, "branch": "topic", "message": "m", "files": [{"path": "p", "content": "p"}]}),
            ("create_pull_request", {"repo": REPO, "title": "T", "head": "topic", "base": "main"}),
            ("update_pull_request", {"repo": REPO, "number": 46, "title": "Retitled"}),
            ("review_pull_request", {"repo": REPO, "number": 46, "event": "APPROVE"}),
            ("merge_pull_request", {"repo": REPO, "number": 46}),
            ("fork_repository", {"repo": "octocat/hello", "organization": "acme"}),
        ]:
            await client.call_tool_mcp(tool, arguments)
        fake.rename(REPO, "acme/gadgets")
        await client.call_tool_mcp("list_issues", {"repo": REPO, "labels": ["bug"]})
        await client.call_tool_mcp("add_issue_comment", {"repo": REPO, "number": 3, "body": "moved"})


def _problems(complete: bool) -> list[str]:
    seen: set[tuple[str, str, int, bytes]] = set()
    problems: list[str] = []
    for sent in list(SENT):
        key = (sent.method, sent.path, sent.status, sent.body)
        if key not in seen:
            seen.add(key)
            problems += problems_with(sent, complete)
    return list(dict.fromkeys(problems))


@pytest.fixture
def _installed() -> None:
    if not DESCRIPTION.exists():
        pytest.skip(
            "GitHub's OpenAPI description is not installed;"
            " run `npm ci --prefix packages/mcp-server-github/tests/openapi` to check the fake against it"
        )


@pytest.mark.usefixtures("_installed")
async def test_every_answer_of_the_fake_has_githubs_operations_statuses_types_and_nulls(fake: FakeGitHub) -> None:
    await _sweep(fake)
    problems = _problems(complete=False)
    assert not problems, f"{len(problems)} answers differ from GitHub's description:\n" + "\n".join(problems)


@pytest.mark.usefixtures("_installed")
async def test_every_answer_of_the_fake_has_every_field_github_requires(fake: FakeGitHub) -> None:
    await _sweep(fake)
    problems = _problems(complete=True)
    assert not problems, f"{len(problems)} answers lack fields GitHub requires:\n" + "\n".join(problems)
