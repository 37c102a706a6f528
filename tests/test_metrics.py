"""GET /metrics on the HTTP front: the token the MCP endpoint takes, Prometheus text the library's own parser
reads, counts that match the calls made, and one sum across --workers."""

from __future__ import annotations

import os
from pathlib import Path

import httpx2
from mcp_server_core.testing import HttpWire, python_module, spawn_http_server
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SERVERS

TOKEN = "metrics-test-token-" + "m" * 40


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], metric: str, **labels: str) -> float:
    return samples.get((metric, tuple(sorted(labels.items()))), 0.0)


def test_metrics_count_calls_by_tool_and_outcome_behind_the_endpoints_token(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_TEMPLATE_AUTH_TOKEN": TOKEN}
    with (
        spawn_http_server(SERVERS["template"](tmp_path), env=env) as (url, _process),
        HttpWire(url, token=TOKEN) as wire,
    ):
        wire.initialize()
        wire.request("tools/call", {"name": "write_note", "arguments": {"name": "a", "text": "x"}})
        wire.request("tools/call", {"name": "read_note", "arguments": {"name": "missing"}})
        wire.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        wire.request("resources/read", {"uri": "note://a"})
        endpoint = url.removesuffix("/mcp") + "/metrics"
        httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Authorization": "Bearer nope"})
        anonymous = httpx2.get(endpoint)
        scraped = httpx2.get(endpoint, headers={"Authorization": f"Bearer {TOKEN}"})
    assert anonymous.status_code == 401
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert TOKEN not in scraped.text
    samples = _samples(scraped.text)
    calls = "mcp_requests_total"
    assert _value(samples, calls, method="tools/call", name="write_note", outcome="ok") == 1
    assert _value(samples, calls, method="tools/call", name="read_note", outcome="tool_error") == 1
    # A name no tool of the server answered to is not a label value: clients choose it (see below).
    assert _value(samples, calls, method="tools/call", name="other", outcome="protocol_error") == 1
    assert _value(samples, calls, method="resources/read", name="note", outcome="ok") == 1, "a URI's scheme only"
    assert _value(samples, "mcp_request_duration_seconds_count", method="tools/call") == 3
    assert _value(samples, "mcp_requests_in_flight", method="tools/call") == 0
    assert _value(samples, "mcp_auth_failures_total", reason="missing_token") >= 1
    assert _value(samples, "mcp_auth_failures_total", reason="invalid_token") == 1


def test_names_a_client_makes_up_never_become_label_values(tmp_path: Path) -> None:
    """Every distinct label value is a series the process keeps for ever: 3,000 made-up tool names grew /metrics
    from 5 KB to 1 MB (and RSS by 4 MB), so names and URI schemes the server never answered to count as `other`."""
    env = {**os.environ, "MCP_TEMPLATE_AUTH_TOKEN": TOKEN}
    with (
        spawn_http_server(SERVERS["template"](tmp_path), env=env) as (url, _process),
        HttpWire(url, token=TOKEN) as wire,
    ):
        wire.initialize()
        for index in range(60):
            wire.request("tools/call", {"name": f"made_up_{index}", "arguments": {}})
            wire.request("prompts/get", {"name": f"made_up_{index}"})
            wire.request("resources/read", {"uri": f"madeup{index}://x"})
        wire.request("tools/call", {"name": "list_notes", "arguments": {}})
        wire.request("tools/call", {"name": "list_notes", "arguments": {"limit": "not a number"}})
        scraped = httpx2.get(url.removesuffix("/mcp") + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert "made_up" not in scraped.text
    assert "madeup" not in scraped.text
    samples = _samples(scraped.text)
    calls = "mcp_requests_total"
    assert _value(samples, calls, method="tools/call", name="other", outcome="protocol_error") == 60
    assert _value(samples, calls, method="prompts/get", name="other", outcome="protocol_error") == 60
    assert _value(samples, calls, method="resources/read", name="other", outcome="protocol_error") == 60
    assert _value(samples, calls, method="tools/call", name="list_notes", outcome="ok") == 1
    assert _value(samples, calls, method="tools/call", name="list_notes", outcome="tool_error") == 1


def test_metrics_sum_every_worker(tmp_path: Path) -> None:
    argv = [*python_module("mcp_server_db", "--schema-poll-s", "0"), "--stateless", "--workers", "2"]
    with spawn_http_server(argv) as (url, _process):
        for n in range(24):  # a fresh connection each: the kernel spreads them over both workers
            with HttpWire(url) as wire:
                arguments = {"sql": "SELECT :n AS n", "params": {"n": n}}
                answer = wire.modern_request("tools/call", {"name": "run_query", "arguments": arguments})
                assert answer["result"]["isError"] is False
        scrapes = [httpx2.get(url.removesuffix("/mcp") + "/metrics").text for _ in range(6)]
    for text in scrapes:  # whichever worker answered, it counted both
        assert _value(_samples(text), "mcp_requests_total", method="tools/call", name="run_query", outcome="ok") == 24
