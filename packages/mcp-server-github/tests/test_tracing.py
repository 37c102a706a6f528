"""Each request to GitHub is a child span of the call, named for its operation, with no value in it (issue 18)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_github import TOKEN, FakeGitHub, server_for
from fastmcp import Client
from mcp_server_core.testing import recorded_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

REPO = "acme/widgets"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    with recorded_spans() as exporter:
        yield exporter


async def test_each_github_request_is_a_child_span_named_by_its_path_template(
    fake: FakeGitHub, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    async with Client(server_for(fake)) as client:
        await client.call_tool("list_issues", {"repo": REPO, "labels": ["bug"]})
        await client.call_tool("get_file_contents", {"repo": REPO, "path": "src/util.py", "ref": "feature"})
        await client.call_tool_mcp("get_issue", {"repo": REPO, "number": 999})
    finished = spans.get_finished_spans()
    upstream = [s for s in finished if (s.attributes or {}).get("mcp.upstream") == "github"]
    assert [s.name for s in upstream] == [
        "github GET /repos/{owner}/{repo}/issues",
        "github GET /repos/{owner}/{repo}/contents/{path}",
        "github GET /repos/{owner}/{repo}/issues/{issue_number}",
    ]
    by_id = {s.context.span_id: s for s in finished}
    for span in upstream:
        assert span.kind == SpanKind.CLIENT
        assert span.parent is not None
        assert (by_id[span.parent.span_id].attributes or {}).get("gen_ai.tool.name"), "a child of the tool call"
        values = " ".join(str(v) for v in (span.attributes or {}).values())
        for value in ("acme", "widgets", "util.py", "feature", "bug", "999", TOKEN):
            assert value not in values
            assert value not in span.name
