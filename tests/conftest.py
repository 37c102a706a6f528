"""Cross-server fixtures: every server of the family, spawned for real over stdio and HTTP.

`SERVERS` lists how to start each server with an empty, throwaway state. A new server adds itself here
and every wire-level test runs against it too.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_server_core.testing import StdioWire, module_at, python_module, spawn_http_server

Launcher = Callable[[Path], list[str]]

ROOT = Path(__file__).parent.parent
_fakes: dict[str, Any] = {}


_modules: dict[str, Any] = {}


def fake_module(name: str, path: str) -> Any:
    """A package's fake web API module (from its own tests), loaded once by path: tests are not packages."""
    if name not in _modules:
        _modules[name] = module_at(f"root_{name}", ROOT / path)
    return _modules[name]


def _fake(name: str, path: str) -> Any:
    """A package's fake web API, started once and left running for the whole session."""
    if name not in _fakes:
        module = fake_module(name, path)
        _fakes[name] = module
        module.FAKE = getattr(module, "Fake" + name.capitalize())()
        module.FAKE_SERVING = module.FAKE.serve()
        module.FAKE_SERVING.__enter__()
    return _fakes[name]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the fakes while their threads still run: left to the interpreter's exit, shutdown() waits forever."""
    for module in _fakes.values():
        module.FAKE_SERVING.__exit__(None, None, None)
    _fakes.clear()


def _slack(tmp: Path) -> list[str]:
    """Against the package's fake Slack Web API; the token comes from a file, as tokens never go on argv."""
    fake = _fake("slack", "packages/mcp-server-slack/tests/fake_slack.py")
    token = tmp / "slack-token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(fake.BOT_TOKEN + "\n")
    return python_module("mcp_server_slack", "--token-file", str(token), "--api-url", fake.FAKE.url)


SERVERS: dict[str, Launcher] = {
    "template": lambda tmp: python_module("mcp_server_template", "--notes-dir", str(tmp / "notes")),
    "db": lambda tmp: python_module("mcp_server_db", f"sqlite:///{_sample_copy(tmp)}", "--allow-write"),
    "slack": _slack,
    "filesystem": lambda tmp: python_module("mcp_server_filesystem", str(tmp)),
    # No token and nothing listening: the server must still start and list its tools without a request.
    "github": lambda tmp: python_module("mcp_server_github", "--api-url", "http://127.0.0.1:9"),
}

CHANGE_TRIGGERS: dict[str, tuple[str, dict[str, object]]] = {
    "template": ("write_note", {"name": "fresh", "text": "x"}),
    "db": ("execute_statement", {"sql": "CREATE TABLE fresh (id INTEGER PRIMARY KEY)"}),
    "slack": ("list_channels", {}),  # channels seen for the first time become resources
    "filesystem": ("write_file", {"path": "fresh.txt", "content": "x"}),
}
"""A tool call that makes each server send notifications/resources/list_changed."""


def _sample_copy(tmp: Path) -> Path:
    """The db server's bundled sample, copied so that write mode has something throwaway to write to."""
    from mcp_server_db.database import sample_path

    target = tmp / "sample.db"
    if not target.exists():
        shutil.copy(sample_path(), target)
    return target


def change_trigger(server: str) -> tuple[str, dict[str, object]]:
    if server not in CHANGE_TRIGGERS:
        pytest.skip(f"{server} has no tool call that changes its resource list yet")
    return CHANGE_TRIGGERS[server]


@contextlib.contextmanager
def first_event_on_get_stream(url: str, session_id: str) -> Iterator[list[dict[str, object]]]:
    """The session's GET stream, open before the body runs; after it, the list holds the first event it carried
    (empty if none came within 10 s), so a test can see a notification reach the stream."""
    heard: list[dict[str, object]] = []
    opened = threading.Event()

    def listen() -> None:
        headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session_id}
        with httpx2.Client(timeout=15) as client, client.stream("GET", url, headers=headers) as stream:
            opened.set()
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    heard.append(json.loads(line[5:]))
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    assert opened.wait(10), "the GET stream did not open"
    yield heard
    listener.join(10)


@pytest.fixture(params=sorted(SERVERS))
def server_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def server_argv(server_name: str, tmp_path: Path) -> list[str]:
    return SERVERS[server_name](tmp_path)


@pytest.fixture
def stdio(server_argv: list[str]) -> Iterator[StdioWire]:
    with StdioWire(server_argv) as wire:
        yield wire


@pytest.fixture(scope="module", params=sorted(SERVERS))
def http_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(server name, URL): one HTTP server per module and server kind; spawning is the slow part."""
    argv = SERVERS[request.param](tmp_path_factory.mktemp(request.param))
    with spawn_http_server(argv) as (url, _process):
        yield request.param, url


@pytest.fixture
def http_url(http_server: tuple[str, str]) -> str:
    return http_server[1]
