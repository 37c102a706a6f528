"""Each caller acts on Slack as themselves (`--upstream-identity per-user-token`, `oauth`), over the real protocol on
HTTP against the fake, judged from the fake's record: whose token each request carried, what each may do."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx2
from fake_slack import BOT_TOKEN, USER_TOKEN, FakeSlack
from mcp_server_core.auth.identity import token_fingerprint
from mcp_server_core.testing import HttpWire, assert_no_secret, spawn_http_server

ALICE = "xoxp-4242424242-1111111111-AliceOwnUserToken"
BOB = "xoxp-4242424242-2222222222-BobOwnUserToken"
READER = "xoxp-4242424242-3333333333-CarolReadOnlyToken"
READS = "channels:read,channels:history,groups:read,groups:history,users:read,search:read"
WRITES = {"post_message", "reply_to_thread", "add_reaction"}


@contextmanager
def serving(fake: FakeSlack, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """The server in its own process on HTTP, writes on for #general only, its stderr and audit lines kept."""
    environment = {"SLACK_API_URL": fake.url, **(env or {})}
    argv = [sys.executable, "-m", "mcp_server_slack", "--allow-write", "--write-channels", "#general", *args]
    argv += ["--log-level", "DEBUG", "--audit-log", str(tmp_path / "audit.log")]
    with (tmp_path / "server.log").open("wb") as log, spawn_http_server(argv, env=environment, log=log) as (url, _):
        yield url


def per_user(fake: FakeSlack, tmp_path: Path) -> Any:
    return serving(fake, tmp_path, "--upstream-identity", "per-user-token")


def call(wire: HttpWire, tool: str, **arguments: Any) -> dict[str, Any]:
    answer = wire.request("tools/call", {"name": tool, "arguments": arguments})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def tool_names(wire: HttpWire) -> set[str]:
    return {tool["name"] for tool in wire.request("tools/list")["result"]["tools"]}


def test_two_users_at_once_each_post_as_themselves(fake: FakeSlack, tmp_path: Path) -> None:
    fake.add_user_token(ALICE, "U0ALICE00", READS + ",chat:write")
    fake.add_user_token(BOB, "U0BOB0000", READS + ",chat:write")
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def act(token: str, who: str) -> None:
        try:
            with HttpWire(url, token=token) as wire:
                wire.initialize()
                start.wait(timeout=30)
                for n in range(3):
                    posted = call(wire, "post_message", channel="#general", text=f"{who} {n}")
                    assert not posted.get("isError"), posted
                    assert not call(wire, "read_messages", channel="#general", limit=5).get("isError")
                # The allow-list holds for every caller, whatever their own token may do.
                refused = call(wire, "post_message", channel="#random", text=f"{who} elsewhere")
                assert refused.get("isError"), refused
        except BaseException as exc:
            failures.append(exc)

    with per_user(fake, tmp_path) as url:
        threads = [threading.Thread(target=act, args=(t, w)) for t, w in ((ALICE, "alice"), (BOB, "bob"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert not failures, failures
    for token, who, user_id in ((ALICE, "alice", "U0ALICE00"), (BOB, "bob", "U0BOB0000")):
        posts = [r for r in fake.requests if r.method == "chat.postMessage" and r.token == token]
        assert sorted(p.params["text"] for p in posts) == [f"{who} 0", f"{who} 1", f"{who} 2"]
        authored = {m["text"] for m in fake.messages["C0GENERAL"] if m.get("user") == user_id}
        assert authored >= {f"{who} {n}" for n in range(3)}
        # One auth.test per token for its verdict, however many calls it made.
        assert len([r for r in fake.requests if r.method == "auth.test" and r.token == token]) == 1
    assert not [r for r in fake.requests if r.method == "chat.postMessage" and r.params.get("channel") != "C0GENERAL"]
    # Nobody acted as the bot, nor with a token that was not theirs.
    assert {r.token for r in fake.requests} <= {ALICE, BOB, ""}
    audit = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    principals = {line["principal"] for line in audit if line["method"] == "tools/call"}
    assert principals == {
        f"{token_fingerprint(ALICE)}/slack:T0FAKE/U0ALICE00",
        f"{token_fingerprint(BOB)}/slack:T0FAKE/U0BOB0000",
    }


def test_a_token_that_cannot_write_gets_no_write_tools(fake: FakeSlack, tmp_path: Path) -> None:
    fake.add_user_token(ALICE, "U0ALICE00", READS + ",chat:write")
    fake.add_user_token(READER, "U0CAROL00", READS)
    with (
        per_user(fake, tmp_path) as url,
        HttpWire(url, token=ALICE) as writer,
        HttpWire(url, token=READER) as reader,
    ):
        writer.initialize()
        reader.initialize()
        assert tool_names(writer) >= WRITES
        assert not WRITES & tool_names(reader)
        refused = reader.request(
            "tools/call", {"name": "post_message", "arguments": {"channel": "#general", "text": "x"}}
        )
        assert "error" in refused or refused["result"]["isError"], refused
        assert not call(reader, "read_messages", channel="#general", limit=5).get("isError")
    assert not [r for r in fake.requests if r.token == READER and r.method == "chat.postMessage"]


def test_tokens_reach_no_log_audit_line_or_error(fake: FakeSlack, tmp_path: Path) -> None:
    fake.add_user_token(ALICE, "U0ALICE00", READS + ",chat:write")
    rejected = "xoxp-4242424242-9999999999-NobodyKnowsThisToken"
    with per_user(fake, tmp_path) as url, HttpWire(url, token=ALICE) as wire:
        wire.initialize()
        answers = [
            call(wire, "read_messages", channel="#general", limit=5),
            call(wire, "read_messages", channel="#no-such-channel", limit=5),
        ]
        denied = [
            httpx2.post(url, headers={"Authorization": f"Bearer {token}"}, json={}, timeout=30)
            for token in (rejected, BOT_TOKEN)  # a bot token is nobody's own identity
        ]
        # Ready without a token of its own: Slack answered (auth.test without a token).
        ready = httpx2.get(url.removesuffix("/mcp") + "/readyz", timeout=30)
        assert ready.status_code == 200, ready.text
    assert [a.get("isError", False) for a in answers] == [False, True]
    assert [d.status_code for d in denied] == [401, 401]
    # The bot token was turned away unasked; the unknown user token cost one auth.test.
    assert not [r for r in fake.requests if r.token == BOT_TOKEN]
    seen = json.dumps(answers) + "".join(d.text for d in denied)
    seen += (tmp_path / "server.log").read_text() + (tmp_path / "audit.log").read_text()
    assert "U0ALICE00" in seen
    assert_no_secret(seen, (ALICE, rejected, BOT_TOKEN), prefix=16)


def test_the_bot_token_stays_the_default_and_a_bearer_is_never_sent(fake: FakeSlack, tmp_path: Path) -> None:
    """Token passthrough stays forbidden where the bearer is not a Slack token: the server acts as its bot."""
    bearer = "static-bearer-" + "s" * 40
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_USER_TOKEN": USER_TOKEN, "MCP_SLACK_AUTH_TOKEN": bearer}
    with serving(fake, tmp_path, env=env) as url, HttpWire(url, token=bearer) as wire:
        wire.initialize()
        assert not call(wire, "post_message", channel="#general", text="as the bot").get("isError")
    assert {r.token for r in fake.requests} <= {BOT_TOKEN, USER_TOKEN}
    (post,) = [m for m in fake.messages["C0GENERAL"] if m.get("text") == "as the bot"]
    assert post["user"] == "U0BOT0000"


APP = "1234.5678"


def sign_in(
    fake: FakeSlack, url: str, browser: httpx2.Client, at_slack: Callable[[str], str] = lambda url: url
) -> tuple[str, dict[str, str], httpx2.Response]:
    """A host's sign-in through the proxy up to Slack's answer, the browser going to `at_slack(url)` for Slack's
    authorize page: the host's client id, what the proxy asked Slack for, and the proxy's callback answer."""
    base = url.removesuffix("/mcp")
    metadata = browser.get(f"{base}/.well-known/oauth-authorization-server").json()
    client = browser.post(
        metadata["registration_endpoint"], json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
    ).json()
    authorize = browser.get(
        metadata["authorization_endpoint"],
        params={
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT,
            "code_challenge": CHALLENGE,
            "code_challenge_method": "S256",
            "state": "s1",
        },
    )
    consent = browser.get(authorize.headers["location"])
    fields = dict(re.findall(r'name="(txn_id|csrf_token)" value="([^"]+)"', consent.text))
    upstream = browser.post(f"{base}/consent", data={**fields, "action": "approve"}).headers["location"]
    assert upstream.startswith(fake.url.removesuffix("api/") + "oauth/v2/authorize?")
    callback = browser.get(browser.get(at_slack(upstream)).headers["location"])
    return client["client_id"], dict(parse_qsl(urlsplit(upstream).query)), callback


REDIRECT = "http://127.0.0.1:9/callback"
VERIFIER = "w" * 64
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).decode().rstrip("=")


def oauth_serving(fake: FakeSlack, tmp_path: Path) -> Any:
    fake.oauth_apps[APP] = "slack-client-secret-" + "c" * 20
    env = {"MCP_SLACK_OAUTH_CLIENT_SECRET": fake.oauth_apps[APP]}
    return serving(fake, tmp_path, "--upstream-identity", "oauth", "--oauth-client-id", APP, env=env)


def test_oauth_sign_in_posts_as_the_signed_in_user(fake: FakeSlack, tmp_path: Path) -> None:
    """Slack's OAuth v2 through the proxy: user scopes only, PKCE between the proxy and Slack (the fake checks the
    verifier as Slack does), the user's token lifted from `authed_user`."""
    fake.signing_in = "U0BOB0000"
    with oauth_serving(fake, tmp_path) as url, httpx2.Client(timeout=30) as browser:
        client_id, asked, callback = sign_in(fake, url, browser)
        assert "chat:write" in asked["user_scope"].split(",")
        assert "scope" not in asked
        # The proxy's own challenge, not the host's: the host's verifier never leaves the host and the proxy.
        assert asked["code_challenge_method"] == "S256"
        assert asked["code_challenge"] != CHALLENGE
        assert callback.status_code == 302, callback.text[:300]
        code = dict(parse_qsl(urlsplit(callback.headers["location"]).query))["code"]
        base = url.removesuffix("/mcp")
        metadata = browser.get(f"{base}/.well-known/oauth-authorization-server").json()
        tokens = browser.post(
            metadata["token_endpoint"],
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": VERIFIER,
            },
        ).json()
        with HttpWire(url, token=tokens["access_token"]) as wire:
            wire.initialize()
            assert not call(wire, "post_message", channel="#general", text="signed in").get("isError")
    [exchange] = [r for r in fake.requests if r.method == "oauth.v2.access"]
    assert exchange.params.get("code_verifier")
    assert exchange.answered == "ok"
    (user_token,) = [t for t, (who, _) in fake.people.items() if who == "U0BOB0000"]
    posts = [r for r in fake.requests if r.method == "chat.postMessage"]
    assert [(p.params["text"], p.token) for p in posts] == [("signed in", user_token)]
    assert [m.get("user") for m in fake.messages["C0GENERAL"] if m.get("text") == "signed in"] == ["U0BOB0000"]
    assert user_token not in (tmp_path / "server.log").read_text()
    assert exchange.params["code_verifier"] not in (tmp_path / "server.log").read_text()


def test_a_code_whose_pkce_verifier_does_not_match_gets_no_token(fake: FakeSlack, tmp_path: Path) -> None:
    """PKCE is checked, not merely carried: with the challenge Slack is shown swapped on the way (a code issued
    for another challenge, as an injected code would be), the proxy's verifier does not match, Slack refuses the
    code, and nobody is signed in."""
    fake.signing_in = "U0BOB0000"
    other = base64.urlsafe_b64encode(hashlib.sha256(b"x" * 64).digest()).decode().rstrip("=")

    def swapped(url: str) -> str:
        parts = urlsplit(url)
        query = {**dict(parse_qsl(parts.query)), "code_challenge": other}
        return parts._replace(query=urlencode(query)).geturl()

    with oauth_serving(fake, tmp_path) as url, httpx2.Client(timeout=30) as browser:
        _, _, callback = sign_in(fake, url, browser, swapped)
        assert callback.status_code != 302 or "code=" not in callback.headers.get("location", "")
    [exchange] = [r for r in fake.requests if r.method == "oauth.v2.access"]
    assert exchange.params.get("code_verifier")
    assert exchange.answered == "invalid_code"
    assert not [t for t, (who, _) in fake.people.items() if who == "U0BOB0000"]  # no token was issued


def test_a_jwt_from_the_identity_provider_is_never_sent_to_slack(fake: FakeSlack, tmp_path: Path) -> None:
    import time

    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "key.pem"
    pem.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    bearer = jwt.encode({"aud": "mcp-slack", "sub": "alice", "exp": int(time.time()) + 300}, key, algorithm="RS256")
    args = ("--jwt-public-key-file", str(pem), "--jwt-audience", "mcp-slack")
    with serving(fake, tmp_path, *args, env={"SLACK_BOT_TOKEN": BOT_TOKEN}) as url, HttpWire(url, token=bearer) as w:
        w.initialize()
        assert not call(w, "read_messages", channel="#general", limit=5).get("isError")
    assert fake.requests
    assert {r.token for r in fake.requests} == {BOT_TOKEN}
    assert all(bearer not in json.dumps(r.params) for r in fake.requests)
