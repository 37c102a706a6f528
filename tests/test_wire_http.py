"""Every server over Streamable HTTP: sessions, error codes, DNS-rebinding protection, both eras."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_server_core.testing import HttpWire, StdioWire, spawn_http_server

from tests.conftest import SERVERS, change_trigger, first_event_on_get_stream

CLIENT = {"name": "wire-test", "version": "1"}
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


@pytest.fixture
def http(http_url: str) -> Iterator[HttpWire]:
    with HttpWire(http_url) as wire:
        yield wire


def test_initialize_opens_a_session_that_serves_tools(http: HttpWire) -> None:
    result = http.initialize()["result"]
    assert result["protocolVersion"] == "2025-11-25"
    assert http.session_id
    assert http.request("tools/list")["result"]["tools"]
    assert http.request("ping")["result"] == {}


def test_an_unknown_version_gets_the_servers_latest(http: HttpWire) -> None:
    assert http.initialize("1999-01-01")["result"]["protocolVersion"] == "2025-11-25"


def test_error_codes_over_http(http: HttpWire) -> None:
    http.initialize()
    assert http.request("tools/call", {"name": "no_such_tool", "arguments": {}})["error"]["code"] == INVALID_PARAMS
    assert http.request("tools/frobnicate")["error"]["code"] == METHOD_NOT_FOUND
    assert "name" in http.request("tools/call", {"nam": "x"})["error"]["message"]
    malformed = http.post(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == PARSE_ERROR


def test_a_request_without_a_session_is_refused(http_url: str) -> None:
    with HttpWire(http_url) as wire:
        response = wire.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "http://evil.example.com"}, 403),
        ({"Host": "evil.example.com"}, 421),
        ({"Host": "evil.example.com", "Origin": "http://evil.example.com"}, 421),
    ],
)
def test_dns_rebinding_is_refused(http_url: str, headers: dict[str, str], status: int) -> None:
    with HttpWire(http_url, headers=headers) as wire:
        response = wire.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "x", "version": "1"},
                },
            }
        )
    assert response.status_code == status


def test_a_loopback_origin_is_allowed(http_url: str) -> None:
    port = http_url.split(":")[2].split("/")[0]
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}"):
        with HttpWire(http_url, headers={"Origin": origin}) as wire:
            assert "result" in wire.initialize()


def test_a_modern_client_needs_no_session(http_url: str) -> None:
    with HttpWire(http_url) as wire:
        discovered = wire.modern_request("server/discover")["result"]
        assert "2026-07-28" in discovered["supportedVersions"]
        assert wire.modern_request("tools/list")["result"]["tools"]
        unknown = wire.modern_request("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert unknown["error"]["code"] == INVALID_PARAMS


def test_a_session_hears_list_changed_on_its_get_stream(http_server: tuple[str, str]) -> None:
    server_name, http_url = http_server
    tool, arguments = change_trigger(server_name)
    with HttpWire(http_url) as wire:
        wire.initialize()
        with first_event_on_get_stream(wire.url, wire.session_id or "") as heard:
            called = wire.request("tools/call", {"name": tool, "arguments": arguments})
            assert not called["result"]["isError"]
    assert heard
    assert heard[0]["method"] == "notifications/resources/list_changed"


def test_concurrent_requests_on_one_session(http: HttpWire) -> None:
    http.initialize()
    results: list[dict[str, object]] = []

    def ask() -> None:
        results.append(http.request("tools/list"))

    threads = [threading.Thread(target=ask) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 12
    assert all("result" in r for r in results)


# --- configurations that need their own process ---------------------------------------------------------------


@pytest.fixture
def template_argv(tmp_path: Path) -> list[str]:
    return SERVERS["template"](tmp_path)


def test_bearer_token_is_required_when_configured_and_never_logged(template_argv: list[str], tmp_path: Path) -> None:
    token = "tok-" + "s3cr3t" * 6
    env = {"MCP_TEMPLATE_AUTH_TOKEN": token}
    log_path = tmp_path / "server.log"
    with (
        log_path.open("wb") as log,
        spawn_http_server([*template_argv, "--log-level", "DEBUG"], env=env, log=log) as (url, process),
    ):
        with HttpWire(url) as anonymous:
            refused = anonymous.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        assert refused.headers.get("www-authenticate", "").lower().startswith("bearer")
        with HttpWire(url, token="wrong-token") as impostor:
            assert impostor.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 401
        with HttpWire(url, token=token) as client:
            assert "result" in client.initialize()
            assert client.request("tools/list")["result"]["tools"]
    assert process.returncode is not None
    logged = log_path.read_text()
    assert "Handler called: list_tools" in logged  # the debug log did record the traffic
    assert token not in logged


def test_binding_beyond_loopback_without_a_token_refuses_to_start(template_argv: list[str]) -> None:
    with StdioWire([*template_argv, "--transport", "http", "--host", "0.0.0.0"]) as wire:
        code = wire.proc.wait(timeout=30)
        assert code == 2
        assert "bearer token" in wire.stderr


def test_stateless_mode_serves_each_post_on_its_own(template_argv: list[str]) -> None:
    with spawn_http_server([*template_argv, "--stateless"]) as (url, _process), HttpWire(url) as wire:
        assert "result" in wire.initialize()
        assert wire.session_id is None
        wire.protocol_version = "2025-11-25"
        assert wire.request("tools/list")["result"]["tools"]
        assert wire.modern_request("tools/list")["result"]["tools"]
