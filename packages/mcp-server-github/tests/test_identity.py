"""Each caller acts on GitHub as themselves (`--upstream-identity per-user-token`), over the real protocol on HTTP
against the fake, judged from the fake's record: whose token each request carried, what each token may see."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2
import pytest
from fake_github import TOKEN, FakeGitHub, running
from mcp_server_core.auth.identity import token_fingerprint
from mcp_server_core.testing import HttpWire, assert_no_secret, spawn_http_server

ALICE = "ghp_AliceToken0123456789abcdefghijklmnopqrstuv"
BOB = "ghp_BobToken0123456789abcdefghijklmnopqrstuvwxy"
READER = "ghp_ReaderToken0123456789abcdefghijklmnopqrs"
FINE = "github_pat_11FineGrained0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"
WRITES = {"create_issue", "update_issue", "add_issue_comment", "create_or_update_file", "merge_pull_request"}


@contextmanager
def serving(fake: FakeGitHub, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """The server in its own process on HTTP, its stderr and audit lines kept in files under `tmp_path`."""
    environment = {
        "MCP_GITHUB_API_URL": fake.url + fake.prefix,
        "MCP_GITHUB_TOOLSETS": "all",
        "MCP_GITHUB_WRITE_INTERVAL_S": "0",
        **(env or {}),
    }
    argv = [sys.executable, "-m", "mcp_server_github", *args, "--log-level", "DEBUG"]
    argv += ["--audit-log", str(tmp_path / "audit.log")]
    with (tmp_path / "server.log").open("wb") as log, spawn_http_server(argv, env=environment, log=log) as (url, _):
        yield url


def per_user(fake: FakeGitHub, tmp_path: Path, *args: str) -> Any:
    return serving(fake, tmp_path, "--upstream-identity", "per-user-token", *args)


def call(wire: HttpWire, tool: str, **arguments: Any) -> dict[str, Any]:
    answer = wire.request("tools/call", {"name": tool, "arguments": arguments})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def text(result: dict[str, Any]) -> str:
    return "\n".join(block.get("text", "") for block in result["content"])


def tool_names(wire: HttpWire) -> set[str]:
    return {tool["name"] for tool in wire.request("tools/list")["result"]["tools"]}


def carried(fake: FakeGitHub, token: str, method: str | None = None, path: str | None = None) -> list[Any]:
    return [
        r
        for r in fake.requests
        if fake.token_of(r) == token and (method is None or r.method == method) and (path is None or r.path == path)
    ]


def test_two_users_at_once_each_act_as_themselves(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_token(ALICE, "alice", "repo")
    fake.add_token(BOB, "bob", "repo")
    results: dict[str, list[str]] = {}
    start = threading.Barrier(2)

    def act(token: str, who: str) -> None:
        with HttpWire(url, token=token) as wire:
            wire.initialize()
            start.wait(timeout=30)
            said = [text(call(wire, "get_me"))]
            for n in range(3):
                said.append(text(call(wire, "create_issue", repo="acme/widgets", title=f"{who} {n}")))
                said.append(text(call(wire, "list_issues", repo="acme/widgets", limit=5)))
            results[who] = said

    with per_user(fake, tmp_path) as url:
        threads = [threading.Thread(target=act, args=(t, w)) for t, w in ((ALICE, "alice"), (BOB, "bob"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        metrics = httpx2.get(url.removesuffix("/mcp") + "/metrics", headers={"Authorization": f"Bearer {ALICE}"})
    assert set(results) == {"alice", "bob"}
    # The metrics count each caller's calls under the principal the audit line names.
    for token, who in ((ALICE, "alice"), (BOB, "bob")):
        series = f'mcp_principal_calls_total{{outcome="ok",principal="{token_fingerprint(token)}/github:{who}"}} 7.0'
        assert series in metrics.text
    assert "Signed in as alice" in results["alice"][0]
    assert "Signed in as bob" in results["bob"][0]
    # Each issue was written with its author's own token, and GitHub recorded that author.
    for token, who in ((ALICE, "alice"), (BOB, "bob")):
        posts = carried(fake, token, "POST", "/repos/acme/widgets/issues")
        assert sorted(p.body["title"] for p in posts) == [f"{who} 0", f"{who} 1", f"{who} 2"]
    issues = {i["title"]: i["user"]["login"] for i in fake.repos["acme/widgets"].issues.values()}
    assert {title: login for title, login in issues.items() if title.startswith(("alice ", "bob "))} == {
        f"{who} {n}": who for who in ("alice", "bob") for n in range(3)
    }
    # No request went out as anyone else, nor without a token.
    assert {fake.token_of(r) for r in fake.requests} == {ALICE, BOB}
    # The cost of knowing the caller: one GET /user per token for the verdict (get_me asks once more itself).
    assert len(carried(fake, ALICE, "GET", "/user")) == 2
    assert len(carried(fake, BOB, "GET", "/user")) == 2
    audit = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    principals = {line["principal"] for line in audit if line["method"] == "tools/call"}
    assert principals == {f"{token_fingerprint(ALICE)}/github:alice", f"{token_fingerprint(BOB)}/github:bob"}


def test_a_read_only_token_gets_no_write_tools(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_token(ALICE, "alice", "repo, read:org")
    fake.add_token(READER, "bob", "read:org, gist")
    fake.add_token(FINE, "mallory", None)
    with (
        per_user(fake, tmp_path) as url,
        HttpWire(url, token=ALICE) as writer,
        HttpWire(url, token=READER) as reader,
        HttpWire(url, token=FINE) as fine,
    ):
        for wire in (writer, reader, fine):
            wire.initialize()
        assert tool_names(writer) >= WRITES
        offered = tool_names(reader)
        assert not WRITES & offered
        assert {"get_me", "list_issues", "get_file_contents"} <= offered
        # A fine-grained token names no scopes: its writes are offered, and GitHub judges each one.
        assert tool_names(fine) >= WRITES
        refused = reader.request(
            "tools/call", {"name": "create_issue", "arguments": {"repo": "acme/widgets", "title": "sneaky"}}
        )
        assert "error" in refused or refused["result"]["isError"], refused
        listed = call(reader, "list_issues", repo="acme/widgets", limit=5)
        assert not listed.get("isError"), listed
        assert "writes: not with this token" in text(call(reader, "get_me"))
        assert "writes: available" in text(call(writer, "get_me"))
    assert not carried(fake, READER, "POST")
    assert all(i["title"] != "sneaky" for i in fake.repos["acme/widgets"].issues.values())


def test_toolset_discovery_names_no_write_tool_to_a_token_that_cannot_write(fake: FakeGitHub, tmp_path: Path) -> None:
    """list_toolsets and enable_toolset speak of the tools the caller could use: a read-only token hears of no
    write tool (it could neither see nor call one), a token that writes hears of them all."""
    fake.add_token(ALICE, "alice", "repo")
    fake.add_token(READER, "bob", "read:org, gist")
    with (
        per_user(fake, tmp_path, "--toolsets", "dynamic") as url,
        HttpWire(url, token=ALICE) as writer,
        HttpWire(url, token=READER) as reader,
    ):
        for wire in (writer, reader):
            wire.initialize()
        named = set(re.findall(r"[a-z_]+", text(call(writer, "list_toolsets"))))
        assert {"create_issue", "add_issue_comment", "merge_pull_request", "list_issues"} <= named
        listing = text(call(reader, "list_toolsets"))
        assert not WRITES & set(re.findall(r"[a-z_]+", listing)), listing
        assert {"list_issues", "get_pull_request"} <= set(re.findall(r"[a-z_]+", listing))
        enabled = text(call(reader, "enable_toolset", name="issues"))
        assert "list_issues" in enabled
        assert not WRITES & set(re.findall(r"[a-z_]+", enabled)), enabled
        offered = tool_names(reader)
        assert "list_issues" in offered
        assert not WRITES & offered
        assert "create_issue" in text(call(writer, "enable_toolset", name="issues"))
        assert "create_issue" in tool_names(writer)
    assert not carried(fake, READER, "POST")


def test_tokens_reach_no_log_audit_line_or_error(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_token(ALICE, "alice", "repo")
    rejected = "ghp_Rejected0123456789abcdefghijklmnopqrstuvw"
    with per_user(fake, tmp_path) as url, HttpWire(url, token=ALICE) as wire:
        wire.initialize()
        answers = [
            call(wire, "get_me"),
            call(wire, "get_issue", repo="acme/widgets", number=999_999),  # 404: an error's text
            call(wire, "create_issue", repo="acme/locked", title="x"),  # 403: GitHub refuses the write
        ]
        # An upstream that quotes the token back in its error still does not get it to the model.
        fake.fail(r"/issues$", 422, message=f"invalid token {ALICE} in request")
        answers.append(call(wire, "create_issue", repo="acme/widgets", title="x"))
        denied = httpx2.post(url, headers={"Authorization": f"Bearer {rejected}"}, json={}, timeout=30)
        assert denied.status_code == 401
    assert [a.get("isError", False) for a in answers] == [False, True, True, True]
    seen = json.dumps(answers) + denied.text
    seen += (tmp_path / "server.log").read_text() + (tmp_path / "audit.log").read_text()
    assert "alice" in seen  # the log and the answers are there, and they name the account
    assert_no_secret(seen, (ALICE, rejected), prefix=12)


def test_enterprise_base_url_and_the_server_own_token_unused(tmp_path: Path) -> None:
    with contextmanager(running)("/api/v3") as fake:
        fake.add_token(ALICE, "alice", "repo")
        with (
            serving(fake, tmp_path, "--upstream-identity", "per-user-token", env={"GITHUB_TOKEN": TOKEN}) as url,
            HttpWire(url, token=ALICE) as wire,
        ):
            wire.initialize()
            assert "Signed in as alice" in text(call(wire, "get_me"))
            ready = httpx2.get(url.removesuffix("/mcp") + "/readyz", timeout=30)
            assert ready.status_code == 200, ready.text
        assert {r.path for r in fake.requests} >= {"/user", "/rate_limit"}
        # The operator's token is not who callers act as: only readiness could use it, and it asks anonymously.
        assert not [r for r in fake.requests if fake.token_of(r) == TOKEN]


def test_a_static_bearer_is_never_sent_upstream(fake: FakeGitHub, tmp_path: Path) -> None:
    """Token passthrough stays forbidden where the bearer is not a GitHub token: the server acts as its own."""
    bearer = "static-bearer-" + "s" * 40
    env = {"GITHUB_TOKEN": TOKEN, "MCP_GITHUB_AUTH_TOKEN": bearer}
    with serving(fake, tmp_path, env=env) as url, HttpWire(url, token=bearer) as wire:
        wire.initialize()
        assert "Signed in as octocat" in text(call(wire, "get_me"))
        call(wire, "list_issues", repo="acme/widgets", limit=5)
    assert fake.requests
    assert {fake.token_of(r) for r in fake.requests} == {TOKEN}
    assert all(bearer not in json.dumps(r.headers) for r in fake.requests)


def test_per_user_mode_refuses_bearer_tokens_beside_it(fake: FakeGitHub) -> None:
    from mcp_server_github.settings import GitHubSettings

    with pytest.raises(ValueError, match="give one or the other"):
        GitHubSettings(upstream_identity="per-user-token", auth_token="x" * 40)
    with pytest.raises(ValueError, match="client id and client secret"):
        GitHubSettings(upstream_identity="oauth")
    from mcp_server_github.server import build_server

    with pytest.raises(ValueError, match="needs --transport http"):  # over stdio there is one user
        build_server(GitHubSettings(upstream_identity="per-user-token"))


def test_oauth_sign_in_acts_as_the_signed_in_user(fake: FakeGitHub, tmp_path: Path) -> None:
    """The whole sign-in a host runs (RFC 8414 metadata, dynamic registration, PKCE, the consent page, GitHub's
    authorize and token endpoints on the fake): the MCP token the host gets is the proxy's, and each call reaches
    GitHub with the GitHub token the proxy holds for that user, never the MCP token."""
    fake.oauth_apps["Iv1.fakeclient"] = "fake-client-secret-" + "c" * 24
    fake.signing_in = "alice"
    env = {"MCP_GITHUB_OAUTH_CLIENT_SECRET": fake.oauth_apps["Iv1.fakeclient"]}
    args = ("--upstream-identity", "oauth", "--oauth-client-id", "Iv1.fakeclient", "--web-url", fake.url)
    with serving(fake, tmp_path, *args, env=env) as url, httpx2.Client(timeout=30) as browser:
        base = url.removesuffix("/mcp")
        unsigned = browser.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert unsigned.status_code == 401
        metadata = browser.get(f"{base}/.well-known/oauth-authorization-server").json()
        assert metadata["authorization_endpoint"] == f"{base}/authorize"
        assert "S256" in metadata["code_challenge_methods_supported"]
        redirect = "http://127.0.0.1:9/callback"
        client = browser.post(
            metadata["registration_endpoint"],
            json={"redirect_uris": [redirect], "token_endpoint_auth_method": "none", "client_name": "test host"},
        ).json()
        verifier = "v" * 64
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        authorize = browser.get(
            metadata["authorization_endpoint"],
            params={
                "response_type": "code",
                "client_id": client["client_id"],
                "redirect_uri": redirect,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "state": "host-state",
                "resource": url,
            },
        )
        assert authorize.status_code == 302
        consent = browser.get(authorize.headers["location"])
        fields = dict(re.findall(r'name="(txn_id|csrf_token)" value="([^"]+)"', consent.text))
        approved = browser.post(f"{base}/consent", data={**fields, "action": "approve"})
        upstream = approved.headers["location"]
        assert upstream.startswith(f"{fake.url}/login/oauth/authorize?")
        assert "scope=repo" in upstream
        callback = browser.get(browser.get(upstream).headers["location"])  # GitHub sends the browser back
        assert callback.status_code == 302, (callback.status_code, callback.text[:500])
        back = urlsplit(callback.headers["location"])
        assert f"{back.scheme}://{back.netloc}{back.path}" == redirect
        code = dict(parse_qsl(back.query))
        assert code["state"] == "host-state"
        tokens = browser.post(
            metadata["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": code["code"],
                "redirect_uri": redirect,
                "client_id": client["client_id"],
                "code_verifier": verifier,
            },
        ).json()
        mcp_token = tokens["access_token"]
        with HttpWire(url, token=mcp_token) as wire:
            wire.initialize()
            assert "Signed in as alice" in text(call(wire, "get_me"))
            created = call(wire, "create_issue", repo="acme/widgets", title="signed in")
            assert not created.get("isError"), created
    (github_token,) = [t for t, (login, _) in fake.tokens.items() if t.startswith("gho_") and login == "alice"]
    post = carried(fake, github_token, "POST", "/repos/acme/widgets/issues")
    assert [p.body["title"] for p in post] == ["signed in"]
    assert all(mcp_token not in json.dumps(r.headers) for r in fake.requests)
    logged = (tmp_path / "server.log").read_text() + (tmp_path / "audit.log").read_text()
    assert_no_secret(logged, (github_token, mcp_token))


def test_no_token_in_any_span(fake: FakeGitHub) -> None:
    """The server in this process on real HTTP (uvicorn in a thread), so its spans can be read here."""
    import time

    import uvicorn
    from fake_github import settings_for
    from mcp_server_core.testing import free_port, recorded_spans
    from mcp_server_core.transport.http import build_http_app
    from mcp_server_github.server import build_server

    fake.add_token(ALICE, "alice", "repo")
    port = free_port()
    settings = settings_for(fake, token=None, upstream_identity="per-user-token", transport="http", port=port)
    app = build_http_app(build_server(settings), settings)
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=web.run, daemon=True)
    with recorded_spans() as spans:
        thread.start()
        deadline = time.monotonic() + 30
        while not web.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            assert thread.is_alive(), "uvicorn stopped"
            threading.Event().wait(0.02)
        try:
            with HttpWire(f"http://127.0.0.1:{port}/mcp", token=ALICE) as wire:
                wire.initialize()
                call(wire, "get_me")
                call(wire, "create_issue", repo="acme/widgets", title="traced")
                call(wire, "get_issue", repo="acme/widgets", number=999_999)
        finally:
            web.should_exit = True
            thread.join(timeout=30)
        finished = spans.get_finished_spans()
    assert any((s.attributes or {}).get("mcp.upstream") == "github" for s in finished)
    for span in finished:
        said = span.name + json.dumps(dict(span.attributes or {}), default=str)
        said += "".join(e.name + json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
        assert_no_secret(said, (ALICE,), prefix=12)


def test_github_down_while_verifying_is_a_503_to_retry_not_a_sign_in(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_token(ALICE, "alice", "repo")
    fake.fail(r"^/user$", 503, times=4)  # the verdict's GET /user and PyGithub's one retry of it, twice
    with per_user(fake, tmp_path) as url:
        refused = [httpx2.post(url, headers={"Authorization": f"Bearer {ALICE}"}, json={}, timeout=30) for _ in "ab"]
        with HttpWire(url, token=ALICE) as wire:  # GitHub is back: the failure was not cached
            wire.initialize()
            assert "Signed in as alice" in text(call(wire, "get_me"))
    assert [r.status_code for r in refused] == [503, 503]
    assert refused[0].headers["retry-after"] == "5"
    assert refused[0].json()["error"] == "temporarily_unavailable"
    logged = (tmp_path / "server.log").read_text()
    assert "Traceback" not in logged
    assert f"could not verify the token {token_fingerprint(ALICE)}" in logged
    assert ALICE not in logged


def test_a_jwt_from_the_identity_provider_is_never_sent_upstream(fake: FakeGitHub, tmp_path: Path) -> None:
    """A JWT authenticates the caller to this server (audience checked) and goes no further."""
    import time

    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "key.pem"
    pem.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    now = int(time.time())
    bearer = jwt.encode({"aud": "mcp-github", "sub": "alice", "exp": now + 300}, key, algorithm="RS256")
    args = ("--jwt-public-key-file", str(pem), "--jwt-audience", "mcp-github")
    with serving(fake, tmp_path, *args, env={"GITHUB_TOKEN": TOKEN}) as url, HttpWire(url, token=bearer) as wire:
        wire.initialize()
        assert "Signed in as octocat" in text(call(wire, "get_me"))
    assert {fake.token_of(r) for r in fake.requests} == {TOKEN}
    assert all(bearer not in json.dumps(r.headers) and bearer not in json.dumps(r.body) for r in fake.requests)


def test_oauth_is_served_by_one_process() -> None:
    from mcp_server_github.settings import GitHubSettings

    with pytest.raises(ValueError, match="one worker"):
        GitHubSettings(
            upstream_identity="oauth",
            oauth_client_id="Iv1.x",
            oauth_client_secret="s" * 40,
            transport="http",
            stateless=True,
            workers=2,
        )
