"""`--toolsets dynamic` on stateless HTTP (`--stateless`): a toolset choice belongs to the caller's principal.

Stateless HTTP keeps no session in either protocol era, so `enable_toolset` switches a toolset on for the
credential that called it: every later request of that credential (a new connection, either era, another host
sharing `--state-url`) sees and can call the toolset's tools; another credential's requests neither see nor call
them. Where nothing could carry a choice to the next request (no credentials; several workers without a common
store) the discovery tools are left out, or the server refuses to start. Spoken through the real protocol to the
db server.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from mcp_server_core.testing import REDIS_SERVER, HttpWire, free_port, redis_server, spawn_http_server

from tests.conftest import SERVERS

TOKENS = ("m" * 16 + "-first-client-token-0123456789", "t" * 16 + "-other-client-token-0123456789")
DISCOVERY = {"list_toolsets", "enable_toolset"}


def _dynamic_db(tmp_path: Path, *extra: str) -> list[str]:
    tokens = tmp_path / "tokens"
    tokens.write_text("\n".join(TOKENS) + "\n")
    argv = [*SERVERS["db"](tmp_path), "--schema-poll-s", "0", "--toolsets", "dynamic", "--stateless"]
    return [*argv, "--auth-token-file", str(tokens), *extra]


@contextlib.contextmanager
def _wire(url: str, token: str | None, *, handshake: bool = True) -> Iterator[HttpWire]:
    """A fresh client: a connection of its own, nothing carried over from another request but the credential."""
    wire = HttpWire(url, token=token)
    try:
        if handshake:
            wire.initialize()
        yield wire
    finally:
        wire.close()


def _tools(url: str, token: str | None, *, handshake: bool = True) -> set[str]:
    with _wire(url, token, handshake=handshake) as wire:
        ask = wire.request if handshake else wire.modern_request
        return {t["name"] for t in ask("tools/list", {})["result"]["tools"]}


def _call(url: str, token: str, name: str, arguments: dict[str, Any], *, handshake: bool = True) -> dict[str, Any]:
    with _wire(url, token, handshake=handshake) as wire:
        ask = wire.request if handshake else wire.modern_request
        return ask("tools/call", {"name": name, "arguments": arguments})


def _text(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert not result.get("isError"), result
    return "\n".join(block["text"] for block in result["content"])


def _query_toolset(url: str, token: str) -> tuple[str, set[str]]:
    """The db server's `query` toolset, off at start, and its tools (as `list_toolsets` names them)."""
    listing = _text(_call(url, token, "list_toolsets", {}))
    off = re.search(r"^(query) \(off\): .*Tools: (.+)$", listing, re.M)
    assert off, listing
    return off.group(1), set(off.group(2).split(", "))


QUERY = ("run_query", {"sql": "SELECT 1 AS one"})
"""A call of the `query` toolset that answers without error."""


def test_a_stateless_choice_reaches_the_credential_s_later_requests_and_no_other_s(tmp_path: Path) -> None:
    """Chosen by a handshake-era client, whose stateless requests each get a session id of their own: the choice
    is kept under its credential, which its later requests and 2026-07-28 requests of that credential share."""
    mine, theirs = TOKENS
    with spawn_http_server(_dynamic_db(tmp_path)) as (url, _process):
        resident = _tools(url, mine)
        assert resident >= DISCOVERY, resident
        name, tools = _query_toolset(url, mine)
        assert not tools & resident
        enabled = _text(_call(url, mine, "enable_toolset", {"name": name}))
        assert f"Toolset {name} is now on" in enabled
        assert "next request" in enabled  # a stateless server announces nothing: the answer says when they appear

        # Later requests of the same credential, each on a connection of its own, in both eras.
        assert _tools(url, mine) == resident | tools
        assert _tools(url, mine, handshake=False) == resident | tools
        tool, arguments = QUERY
        assert _text(_call(url, mine, tool, arguments))
        assert f"{name} (on)" in _text(_call(url, mine, "list_toolsets", {}))

        # Another credential sees and calls none of it.
        assert _tools(url, theirs) == resident
        assert _tools(url, theirs, handshake=False) == resident
        refused = _call(url, theirs, tool, arguments)
        assert refused.get("error", {}).get("code") == -32602, refused


def test_stateless_without_credentials_serves_the_defaults_and_no_discovery(tmp_path: Path) -> None:
    """Every anonymous caller is one identity: a choice could be no client's own, so none is offered, and the
    instructions do not point at tools that are not there."""
    argv = [*SERVERS["db"](tmp_path), "--schema-poll-s", "0", "--toolsets", "dynamic", "--stateless"]
    with spawn_http_server(argv) as (url, _process), _wire(url, None) as wire:
        instructions = wire.initialize()["result"].get("instructions") or ""
        names = {t["name"] for t in wire.request("tools/list", {})["result"]["tools"]}
    assert "run_query" in names
    assert not names & DISCOVERY
    assert "enable_toolset" not in instructions


def test_dynamic_toolsets_on_several_workers_without_a_state_store_are_refused_at_start(tmp_path: Path) -> None:
    argv = [*_dynamic_db(tmp_path, "--workers", "2"), "--transport", "http", "--port", str(free_port())]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done
    assert "--state-url" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed (apt-get install redis-server)")
def test_a_stateless_choice_made_on_one_host_holds_on_another_sharing_the_state_store(tmp_path: Path) -> None:
    mine, theirs = TOKENS
    redis_port = free_port()
    with contextlib.ExitStack() as stack:
        stack.enter_context(redis_server(redis_port))
        state = ("--state-url", f"redis://127.0.0.1:{redis_port}/0")
        folders = [tmp_path / f"host-{host}" for host in range(2)]
        for folder in folders:
            folder.mkdir()
        starting = [spawn_http_server(_dynamic_db(folder, *state)) for folder in folders]
        # Both hosts start at once: each takes seconds to import and listen on a busy machine.
        with ThreadPoolExecutor(len(starting)) as pool:
            futures = [pool.submit(server.__enter__) for server in starting]
        for server, future in zip(starting, futures, strict=True):
            if future.exception() is None:
                stack.push(server.__exit__)  # every host that started is stopped, even if the other did not
        first, second = (future.result()[0] for future in futures)
        resident = _tools(second, mine)
        name, tools = _query_toolset(first, mine)
        enabled = _call(first, mine, "enable_toolset", {"name": name}, handshake=False)
        assert f"Toolset {name} is now on" in _text(enabled)

        assert _tools(second, mine) == resident | tools
        assert _tools(second, mine, handshake=False) == resident | tools
        tool, arguments = QUERY
        assert _text(_call(second, mine, tool, arguments))
        assert _tools(second, theirs) == resident
        assert _call(second, theirs, tool, arguments).get("error", {}).get("code") == -32602
