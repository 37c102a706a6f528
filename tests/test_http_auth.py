"""HTTP authentication as MCP's authorization spec asks, against a real server process.

Tokens are made here with pyjwt and keys from `cryptography`, independently of the server's verifier
(fastmcp's JWTVerifier on joserfc). A good token is served; a missing, expired, foreign, tampered or
wrongly addressed one gets 401 with a `WWW-Authenticate: Bearer` challenge naming the protected resource
metadata, which is served as RFC 9728 says; static bearer tokens keep working beside JWTs; no token is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp_server_core.testing import HttpWire, free_port, spawn_http_server

from tests.conftest import SERVERS

ISSUER = "https://id.example.com"
STATIC = "static-" + "k3y" * 10
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


@dataclass
class Server:
    url: str
    key: rsa.RSAPrivateKey
    jwks: Path
    log: Path

    def token(self, *, key: rsa.RSAPrivateKey | None = None, kid: str = "k1", **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": self.url, "sub": "alice", "iat": now, "exp": now + 300, **claims}
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": kid})

    def post(self, token: str | None, body: dict[str, Any] | None = None) -> httpx2.Response:
        with HttpWire(self.url, token=token) as wire:
            return wire.post(body or PING)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auth")
    key = _key()
    jwks = tmp / "jwks.json"
    jwks.write_text(json.dumps({"keys": [_jwk(key, "k1")]}))
    port = free_port()
    argv = [*SERVERS["template"](tmp), "--jwks-file", str(jwks), "--jwt-issuer", ISSUER, "--log-level", "DEBUG"]
    log = tmp / "server.log"
    with log.open("wb") as sink, spawn_http_server(argv, port=port, env={"MCP_TEMPLATE_AUTH_TOKEN": STATIC}, log=sink):
        yield Server(f"http://127.0.0.1:{port}/mcp", key, jwks, log)


def test_a_token_signed_by_the_configured_key_is_served(server: Server) -> None:
    with HttpWire(server.url, token=server.token()) as wire:
        assert wire.initialize()["result"]["serverInfo"]
        assert wire.request("tools/list")["result"]["tools"]


def test_the_static_token_still_works_beside_jwts(server: Server) -> None:
    with HttpWire(server.url, token=STATIC) as wire:
        assert "result" in wire.initialize()


def _challenge(response: httpx2.Response) -> str:
    assert response.status_code == 401, (response.status_code, response.text[:200])
    challenge = response.headers.get("www-authenticate", "")
    assert challenge.startswith("Bearer"), challenge
    metadata = server_metadata_url(response)
    assert f'resource_metadata="{metadata}"' in challenge, challenge
    return challenge


def server_metadata_url(response: httpx2.Response) -> str:
    origin = f"{response.request.url.scheme}://{response.request.url.netloc.decode()}"
    return f"{origin}/.well-known/oauth-protected-resource/mcp"


def test_no_token_gets_a_challenge_without_an_error(server: Server) -> None:
    challenge = _challenge(server.post(None))
    assert "error=" not in challenge  # RFC 6750 3.1: no error attribute when no credentials were sent


@pytest.mark.parametrize(
    "case",
    [
        "expired",
        "wrong_audience",
        "wrong_issuer",
        "foreign_key",
        "unknown_kid",
        "tampered",
        "no_expiry_in_past",
        "wrong_static_token",
    ],
)
def test_a_bad_token_gets_401_invalid_token(server: Server, case: str) -> None:
    now = int(time.time())
    tokens = {
        "expired": lambda: server.token(exp=now - 60, iat=now - 600),
        "wrong_audience": lambda: server.token(aud="http://127.0.0.1:1/mcp"),
        "wrong_issuer": lambda: server.token(iss="https://evil.example.com"),
        "foreign_key": lambda: server.token(key=_key()),
        "unknown_kid": lambda: server.token(key=_key(), kid="k-unknown"),
        "tampered": lambda: _tamper(server.token()),
        "no_expiry_in_past": lambda: server.token(exp=None, nbf=now + 3600),
        "wrong_static_token": lambda: "static-" + "w" * 40,  # a client can tell a bad token from a missing one
    }
    challenge = _challenge(server.post(tokens[case]()))
    assert 'error="invalid_token"' in challenge


def _tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(jwt.utils.base64url_decode(payload))
    claims["sub"] = "mallory"
    forged = jwt.utils.base64url_encode(json.dumps(claims).encode()).decode()
    return f"{header}.{forged}.{signature}"


def test_algorithm_confusion_is_refused(server: Server) -> None:
    public_pem = server.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": server.url, "sub": "x", "exp": now + 300}
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": "k1"})
    assert server.post(unsigned).status_code == 401
    # HS256 keyed with the public key, which an attacker knows: must not verify as if it were a secret.
    header = jwt.utils.base64url_encode(json.dumps({"alg": "HS256", "kid": "k1"}).encode()).decode()
    body = jwt.utils.base64url_encode(json.dumps(claims).encode()).decode()
    mac = hmac.new(public_pem, f"{header}.{body}".encode(), hashlib.sha256).digest()
    forged = f"{header}.{body}.{jwt.utils.base64url_encode(mac).decode()}"
    assert server.post(forged).status_code == 401


def test_protected_resource_metadata_names_the_resource_and_its_issuer(server: Server) -> None:
    origin = server.url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx2.get(origin + path, timeout=10)
        assert response.status_code == 200, path
        metadata = response.json()
        assert metadata["resource"] == server.url
        assert [server.rstrip("/") for server in metadata["authorization_servers"]] == [ISSUER]
        assert metadata["bearer_methods_supported"] == ["header"]


def test_a_key_added_to_the_jwks_file_is_used_without_a_restart(server: Server) -> None:
    new_key = _key()
    token = server.token(key=new_key, kid="k2")
    keys = json.loads(server.jwks.read_text())["keys"]
    server.jwks.write_text(json.dumps({"keys": [*keys, _jwk(new_key, "k2")]}))
    time.sleep(1.2)  # the verifier re-reads the file at most once a second
    with HttpWire(server.url, token=token) as wire:
        assert "result" in wire.initialize()


def test_no_token_reaches_the_log(server: Server) -> None:
    token = server.token()
    with HttpWire(server.url, token=token) as wire:
        wire.initialize()
        wire.request("tools/list")
    server.post(server.token(aud="http://elsewhere/mcp"))
    logged = server.log.read_text()
    assert "Handler called" in logged or "DEBUG" in logged  # the debug log did record the traffic
    assert token not in logged
    assert token.split(".")[2] not in logged
    assert STATIC not in logged


def test_a_public_key_file_works_as_well(tmp_path: Path) -> None:
    key = _key()
    pem = tmp_path / "key.pem"
    pem.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    argv = [*SERVERS["template"](tmp_path), "--jwt-public-key-file", str(pem), "--jwt-audience", "mcp-tests"]
    with spawn_http_server([*argv, "--host", "127.0.0.1"]) as (url, _process):
        now = int(time.time())
        good = jwt.encode({"aud": "mcp-tests", "sub": "bob", "exp": now + 60}, key, algorithm="RS256")
        with HttpWire(url, token=good) as wire:
            assert "result" in wire.initialize()
        other = jwt.encode({"aud": "other", "sub": "bob", "exp": now + 60}, key, algorithm="RS256")
        with HttpWire(url, token=other) as wire:
            refused = wire.post(PING)
        assert refused.status_code == 401
        # Without an issuer there is no authorization server to advertise, so no metadata and no pointer to it.
        assert "resource_metadata" not in refused.headers["www-authenticate"]
