"""`RequestGuard` at the ASGI level: how much of a body it reads, and what it answers instead of the SDK."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_server_core.auth.tokens import auth_provider
from mcp_server_core.conventions.settings import ServerSettings
from mcp_server_core.transport.http import RequestGuard
from mcp_server_core.transport.jsonrpc import MessageRefused, read_message
from pydantic import ValidationError

LIMIT = 1024


class Downstream:
    """The app behind the guard: records the body it was given."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _scope(headers: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        **extra,
    }


async def _run(scope: dict[str, Any], chunks: list[bytes]) -> tuple[list[dict[str, Any]], int, Downstream]:
    app = Downstream()
    guard = RequestGuard(app, path="/mcp", settings=ServerSettings(max_body_bytes=LIMIT))
    sent: list[dict[str, Any]] = []
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        if reads > len(chunks):
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": chunks[reads - 1], "more_body": reads < len(chunks)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    return sent, reads, app


JSON = {"content-type": "application/json"}
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


async def test_a_declared_length_over_the_limit_is_refused_unread() -> None:
    sent, reads, app = await _run(_scope({**JSON, "content-length": str(LIMIT + 1)}), [b"x" * (LIMIT + 1)])
    assert reads == 0
    assert app.bodies == []
    assert sent[0]["status"] == 413
    assert (b"connection", b"close") in sent[0]["headers"]
    error = json.loads(sent[1]["body"])
    assert error["error"]["code"] == -32600
    assert error["id"] is None


async def test_a_streamed_body_stops_being_read_at_the_limit() -> None:
    chunks = [b"[" * 300] * 100  # 30,000 bytes offered, no Content-Length
    sent, reads, app = await _run(_scope(JSON), chunks)
    assert reads == 4  # 1,200 bytes: the first chunk past the limit is the last one read
    assert app.bodies == []
    assert sent[0]["status"] == 413


async def test_a_good_body_reaches_the_app_intact_and_whole() -> None:
    sent, _reads, app = await _run(_scope(JSON), [PING[:10], PING[10:]])
    assert app.bodies == [PING]
    assert sent[0]["status"] == 200


async def test_a_body_that_is_no_message_is_answered_by_the_guard() -> None:
    sent, _reads, app = await _run(_scope(JSON), [b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'])
    assert app.bodies == []
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"])["error"]["code"] == -32600


async def test_a_client_that_leaves_mid_body_gets_nothing() -> None:
    sent, _reads, app = await _run(_scope(JSON), [])
    assert sent == []
    assert app.bodies == []


async def test_an_anonymous_client_never_has_its_body_read() -> None:
    class Anonymous:
        is_authenticated = False

    sent, reads, _app = await _run(_scope(JSON, user=Anonymous()), [b"x" * (LIMIT * 10)])
    # Passed to the route untouched: there, RequireAuthMiddleware answers 401 (here the stub reads it).
    assert reads >= 1
    assert sent[0]["status"] == 200


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"[" * 300 + b"]" * 300, -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 5000 + b"]" * 5000 + b"}", -32700),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
        (b"\xff\xfe", -32700),
        (b"[]", -32600),
    ],
)
def test_read_message_refuses_with_the_right_code(data: bytes, code: int) -> None:
    with pytest.raises(MessageRefused) as refused:
        read_message(data)
    assert refused.value.error.error.code == code


BRACES = "{[" * 30_000  # past the cap, so the exact count is taken


@pytest.mark.parametrize(
    ("message", "containers"),
    [
        ({"text": BRACES}, 1),
        ({"text": '\\"' + BRACES, "more": [BRACES]}, 2),  # an escaped backslash, then an escaped quote
        ({"text": "\\", "list": [[]] * 60_000}, 60_002),  # a string ending in a backslash does not hide what follows
    ],
)
def test_brackets_inside_strings_are_not_counted_as_structure(message: dict[str, Any], containers: int) -> None:
    from mcp_server_core.transport.jsonrpc import _structure

    assert _structure(json.dumps(message).encode(), 10**9)[0] == containers


def test_a_huge_integer_id_is_a_valid_request() -> None:
    assert read_message(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % 10**30).id == 10**30  # type: ignore[union-attr]


def test_several_workers_need_stateless_http() -> None:
    with pytest.raises(ValidationError, match="stateless"):
        ServerSettings(transport="http", workers=2)
    with pytest.raises(ValidationError, match="stateless"):
        ServerSettings(workers=2, stateless=True)  # stdio
    assert ServerSettings(transport="http", workers=2, stateless=True).workers == 2


def test_dynamic_toolsets_on_several_workers_need_a_state_store() -> None:
    http = {"transport": "http", "stateless": True, "toolsets": "query,dynamic"}
    with pytest.raises(ValidationError, match="--state-url"):
        ServerSettings(**http, workers=2)
    assert ServerSettings(**http, workers=2, state_url="redis://127.0.0.1:6379/0").workers == 2
    assert ServerSettings(**http).workers == 1  # one worker keeps the choices in its memory


def test_stateless_choices_are_kept_only_for_callers_with_a_credential_in_one_store(tmp_path: Any) -> None:
    tokens = tmp_path / "tokens"
    http = {"transport": "http", "stateless": True}
    assert not ServerSettings(**http).keeps_choices_without_sessions()  # every caller is the one anonymous
    assert ServerSettings(**http, auth_token_file=tokens).keeps_choices_without_sessions()
    assert not ServerSettings(**http, auth_token_file=tokens, workers=2).keeps_choices_without_sessions()
    shared = ServerSettings(**http, auth_token_file=tokens, workers=2, state_url="redis://127.0.0.1:6379/0")
    assert shared.keeps_choices_without_sessions()


def test_one_jwt_key_source_at_a_time(tmp_path: Any) -> None:
    with pytest.raises(ValidationError, match="either"):
        ServerSettings(jwt_public_key_file=tmp_path / "a.pem", jwks_file=tmp_path / "b.json")


def test_a_public_key_file_without_a_pem_key_is_refused(tmp_path: Any) -> None:
    (tmp_path / "key.pem").write_text("not a key")
    with pytest.raises(ValueError, match="no PEM public key"):
        auth_provider(ServerSettings(jwt_public_key_file=tmp_path / "key.pem"))


def test_no_credentials_configured_means_no_auth() -> None:
    assert auth_provider(ServerSettings()) is None
