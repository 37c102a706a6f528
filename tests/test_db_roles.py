"""Each caller as its own PostgreSQL role (mcp-server-db --role-map), with access tokens from a real OpenID Provider.

The tokens come from oidc-provider (OpenID Certified, pinned in tests/oidc, started here on 127.0.0.1): the
client_credentials grant with a resource indicator, so each is a JWT (RFC 9068) for this server's URL, signed by
a key the provider made at start and verified by the server from the provider's published key set. Three clients
stand for three people: two whose `department` claim the role map names, one it does not. A scratch database
holds one table under a row-level policy on current_user and one table only one role may read; the server logs in
as a NOINHERIT role that holds no privilege of its own. What is checked, from outside the server where it can be:
the two callers see different rows; grants decide too; the unmapped caller is refused and its call reached no
database session (pg_stat_activity, from a second connection); the audit line names principal and role; a token
for another audience is refused; no token reaches the server's log, its audit lines or the database.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_server_core.testing import HttpWire, free_port, python_module, spawn_http_server
from mcp_server_core.testing.wire import PATIENCE_S
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

OIDC = Path(__file__).parent / "oidc"
TAG = secrets.token_hex(4)
PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEPARTMENTS = {"alice": "sales", "bob": "support", "carol": "marketing"}  # carol's is in no role map


@dataclass
class Scratch:
    """The scratch database, its roles, and a second connection (as its owner) that watches the server's."""

    name: str
    login: str
    roles: dict[str, str]  # department -> role
    owner: Engine

    def sessions(self) -> dict[int, tuple[str, str]]:
        """The server's sessions on the scratch database: pid -> (last state change, last statement)."""
        with self.owner.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT pid, state_change::text, query FROM pg_stat_activity WHERE datname = :db "
                    "AND usename = :login"
                ),
                {"db": self.name, "login": self.login},
            ).all()
        return {pid: (changed, query) for pid, changed, query in rows}

    def statements(self) -> list[str]:
        """Every statement any session of the scratch database shows now."""
        with self.owner.connect() as connection:
            rows = connection.execute(
                text("SELECT query || ' ' || application_name FROM pg_stat_activity WHERE datname = :db"),
                {"db": self.name},
            ).all()
        return [row[0] for row in rows]


@pytest.fixture(scope="module")
def scratch() -> Iterator[Scratch]:
    try:
        admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
        admin.connect().close()
    except Exception as exc:
        pytest.fail(f"PostgreSQL on 127.0.0.1:5432 (user postgres) is needed: {type(exc).__name__}", pytrace=False)
    name, login = f"mcpdb_roles_{TAG}", f"mcpdb_roles_login_{TAG}"
    roles = {"sales": f"mcpdb_roles_sales_{TAG}", "support": f"mcpdb_roles_support_{TAG}"}
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
        # NOINHERIT: the login role holds nothing of the roles it may become; each call acts as exactly one.
        connection.execute(text(f"CREATE ROLE {login} LOGIN NOINHERIT"))
        for role in roles.values():
            connection.execute(text(f"CREATE ROLE {role} NOLOGIN"))
            connection.execute(text(f"GRANT {role} TO {login}"))
    owner = create_engine(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", isolation_level="AUTOCOMMIT")
    sales, support = roles["sales"], roles["support"]
    try:
        with owner.connect() as connection:
            for statement in [
                "CREATE TABLE notes (id integer PRIMARY KEY, owner name NOT NULL, body text NOT NULL)",
                f"INSERT INTO notes VALUES (1, '{sales}', 'sales forecast'), (2, '{support}', 'support rota'), "
                f"(3, '{sales}', 'sales pipeline')",
                "ALTER TABLE notes ENABLE ROW LEVEL SECURITY",
                "CREATE POLICY own_notes ON notes USING (owner = current_user)",
                f"GRANT SELECT ON notes TO {sales}, {support}",
                "CREATE TABLE tickets (id integer PRIMARY KEY, subject text NOT NULL)",
                "INSERT INTO tickets VALUES (1, 'printer on fire')",
                f"GRANT SELECT ON tickets TO {support}",
            ]:
                connection.execute(text(statement))
        yield Scratch(name, login, roles, owner)
    finally:
        owner.dispose()
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            for role in [*roles.values(), login]:
                connection.execute(text(f"DROP ROLE IF EXISTS {role}"))
        admin.dispose()


@dataclass
class Provider:
    issuer: str
    jwks: dict[str, Any]

    def token(self, client: str, resource: str) -> str:
        answer = httpx2.post(
            f"{self.issuer}/token",
            data={
                "grant_type": "client_credentials",
                "client_id": client,
                "client_secret": _secret(client),
                "resource": resource,
                "scope": "db",
            },
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token


def _secret(client: str) -> str:
    return f"{client}-secret-{TAG}-0123456789abcdef"


def _start_provider(resources: list[str]) -> tuple[subprocess.Popen[str], str]:
    node = shutil.which("node")
    if node is None or not (OIDC / "node_modules" / "oidc-provider").is_dir():
        pytest.fail("the OpenID Provider is not installed: run `make oidc-deps` (npm ci, pinned)", pytrace=False)
    clients = [
        {"client_id": client, "client_secret": _secret(client), "department": department}
        for client, department in DEPARTMENTS.items()
    ]
    proc = subprocess.Popen(
        [node, str(OIDC / "provider.mjs"), json.dumps({"clients": clients, "resources": resources})],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # its one line says it serves; blocks until then, or EOF if it died
    if not line:
        proc.wait(timeout=10)
        pytest.fail(f"the OpenID Provider exited with {proc.returncode} before serving", pytrace=False)
    issuer: str = json.loads(line)["issuer"]
    return proc, issuer


@dataclass
class Served:
    url: str
    role_map: Path
    log: Path
    audit: Path
    provider: Provider
    tokens: dict[str, str]  # client -> its access token for this server
    foreign: str  # alice's token for another resource

    def call(self, client: str, sql: str) -> dict[str, Any]:
        with HttpWire(self.url, token=self.tokens[client]) as wire:
            wire.initialize()
            answer = wire.request("tools/call", {"name": "run_query", "arguments": {"sql": sql}})
        result: dict[str, Any] = answer["result"]
        return result

    def audit_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]

    def last_audit_line_of(self, principal: str) -> dict[str, Any]:
        """The newest audit line of a caller, once written: the writer thread appends lines off the request path."""
        deadline = time.monotonic() + PATIENCE_S
        while not (lines := [e for e in self.audit_lines() if e["principal"].startswith(principal)]):
            assert time.monotonic() < deadline, f"no audit line of {principal}"
            time.sleep(0.05)
        return lines[-1]


@pytest.fixture(scope="module")
def served(scratch: Scratch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("db-roles")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    other = f"http://127.0.0.1:{port}/other"
    proc, issuer = _start_provider([url, other])
    try:
        discovery = httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
        provider = Provider(issuer, httpx2.get(discovery["jwks_uri"], timeout=10).json())
        jwks = tmp / "jwks.json"
        jwks.write_text(json.dumps(provider.jwks))
        role_map = tmp / "roles.toml"
        role_map.write_text(
            'claim = "department"\n[roles]\n'
            + "".join(f'{department} = "{role}"\n' for department, role in scratch.roles.items())
        )
        log, audit = tmp / "server.log", tmp / "audit.jsonl"
        argv = python_module(
            "mcp_server_db",
            f"postgresql+psycopg://{scratch.login}@127.0.0.1:5432/{scratch.name}",
            "--role-map",
            str(role_map),
            "--jwks-file",
            str(jwks),
            "--jwt-issuer",
            issuer,
            "--audit-log",
            str(audit),
            "--schema-poll-s",
            "0",  # no background reads: every statement the database sees is a call's
            "--log-level",
            "DEBUG",
        )
        tokens = {client: provider.token(client, url) for client in DEPARTMENTS}
        foreign = provider.token("alice", other)
        with log.open("wb") as sink, spawn_http_server(argv, port=port, log=sink):
            yield Served(url, role_map, log, audit, provider, tokens, foreign)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def _rows(result: dict[str, Any]) -> list[list[Any]]:
    assert not result.get("isError"), result["content"][0]["text"]
    rows: list[list[Any]] = result["structuredContent"]["rows"]
    return rows


def test_two_callers_see_the_rows_their_roles_may(served: Served, scratch: Scratch) -> None:
    sql = "SELECT id, body, current_user AS acting FROM notes ORDER BY id"
    alice, bob = _rows(served.call("alice", sql)), _rows(served.call("bob", sql))
    assert alice == [[1, "sales forecast", scratch.roles["sales"]], [3, "sales pipeline", scratch.roles["sales"]]]
    assert bob == [[2, "support rota", scratch.roles["support"]]]
    # And again in the other order, on connections the pool has reset in between: no role outlives its call.
    assert _rows(served.call("bob", sql)) == bob
    assert _rows(served.call("alice", sql)) == alice


def test_grants_decide_per_caller_too(served: Served) -> None:
    assert _rows(served.call("bob", "SELECT subject FROM tickets")) == [["printer on fire"]]
    refused = served.call("alice", "SELECT subject FROM tickets")
    assert refused.get("isError")
    assert "permission denied" in refused["content"][0]["text"]


def test_a_caller_the_map_does_not_name_is_refused_and_reaches_no_session(served: Served, scratch: Scratch) -> None:
    served.call("alice", "SELECT 1")  # the pool holds a session now: an unmapped call must not touch it
    marker = f"carol_was_here_{TAG}"
    # The server's first schema read (after initialize) may still be under way on another session: wait until
    # every session is back in the pool (its reset, DISCARD ALL, the last thing it ran).
    deadline = time.monotonic() + PATIENCE_S
    while any(query.strip() != "DISCARD ALL" for _, query in scratch.sessions().values()):
        assert time.monotonic() < deadline, f"the server's sessions never went quiet: {scratch.sessions()}"
        time.sleep(0.05)
    before = scratch.sessions()
    assert before  # the server's pooled session is there to be watched
    refused = served.call("carol", f"SELECT '{marker}' AS m FROM notes")
    assert refused.get("isError")
    message = refused["content"][0]["text"]
    assert "has no database role" in message
    assert "--role-map" in message
    # Any statement, the pool's pre-ping included, would move a session's state_change; a new one would show.
    assert scratch.sessions() == before
    assert not any(marker in statement for statement in scratch.statements())
    line = served.last_audit_line_of("carol")
    assert line["outcome"] == "refused"
    assert "acting_as" not in line


def test_the_audit_line_names_the_caller_and_its_role(served: Served, scratch: Scratch) -> None:
    served.call("bob", "SELECT count(*) FROM notes")
    line = served.last_audit_line_of("bob/")
    assert line["principal"] == "bob/bob"  # client_id / sub of the provider's token
    assert line["acting_as"] == f"role:{scratch.roles['support']}"
    assert line["outcome"] == "ok"


def test_a_token_for_another_audience_is_refused(served: Served) -> None:
    with HttpWire(served.url, token=served.foreign) as wire:
        response = wire.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401
    assert "invalid_token" in response.headers.get("www-authenticate", "")


def test_no_token_reaches_the_log_the_audit_lines_or_the_database(served: Served, scratch: Scratch) -> None:
    for client in DEPARTMENTS:
        served.call(client, "SELECT count(*) FROM notes")
    for client in DEPARTMENTS:
        served.last_audit_line_of(f"{client}/")  # every line written before the file is read
    written = served.log.read_text(errors="replace") + served.audit.read_text()
    seen = " ".join(scratch.statements())
    for token in [*served.tokens.values(), served.foreign]:
        signature = token.rpartition(".")[2]
        for piece in (token, signature[:16], token[:40]):
            assert piece not in written
            assert piece not in seen
    assert "role:" in served.audit.read_text()  # the trail was written, so its silence above means something


def _command(scratch: Scratch, role_map: Path, sql: str) -> subprocess.CompletedProcess[str]:
    argv = python_module(
        "mcp_server_db", f"postgresql+psycopg://{scratch.login}@127.0.0.1:5432/{scratch.name}", "--role-map"
    )
    return subprocess.run(
        [*argv, str(role_map), "call", "run_query", sql], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_command_line_acts_as_the_maps_local_caller(scratch: Scratch, tmp_path: Path) -> None:
    as_support = tmp_path / "local.json"
    as_support.write_text(json.dumps({"roles": {"local": scratch.roles["support"]}}))
    done = _command(scratch, as_support, "SELECT body FROM notes ORDER BY id")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[1:2] == ["support rota"]
    unnamed = tmp_path / "unnamed.json"
    unnamed.write_text(json.dumps({"roles": {"somebody/else": scratch.roles["sales"]}}))
    refused = _command(scratch, unnamed, "SELECT body FROM notes")
    assert refused.returncode != 0
    assert "has no database role" in refused.stdout + refused.stderr


def test_resource_reads_act_as_the_caller_too(served: Served) -> None:
    def read(client: str) -> dict[str, Any]:
        with HttpWire(served.url, token=served.tokens[client]) as wire:
            wire.initialize()
            return wire.request("resources/read", {"uri": "db://tables/notes"})

    assert "notes" in read("alice")["result"]["contents"][0]["text"]
    refused = read("carol")
    assert "has no database role" in refused["error"]["message"]


def test_a_mapped_role_that_bypasses_policies_or_is_missing_is_refused(scratch: Scratch, tmp_path: Path) -> None:
    bypass = f"mcpdb_roles_bypass_{TAG}"
    with scratch.owner.connect() as connection:
        connection.execute(text(f"CREATE ROLE {bypass} NOLOGIN BYPASSRLS"))
        connection.execute(text(f"GRANT {bypass} TO {scratch.login}"))
    try:
        role_map = tmp_path / "bypass.json"
        role_map.write_text(json.dumps({"roles": {"local": bypass}}))
        refused = _command(scratch, role_map, "SELECT body FROM notes")
        assert refused.returncode != 0
        assert f"mapped role {bypass}: BYPASSRLS" in refused.stdout + refused.stderr
        assert "sales forecast" not in refused.stdout
    finally:
        with scratch.owner.connect() as connection:
            connection.execute(text(f"DROP ROLE {bypass}"))
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"roles": {"local": f"mcpdb_roles_nobody_{TAG}"}}))
    unusable = _command(scratch, missing, "SELECT body FROM notes")
    assert unusable.returncode != 0
    assert "could not act as its database role" in unusable.stdout + unusable.stderr


@pytest.mark.parametrize(
    "escape",
    [
        "SET ROLE {other}",
        "RESET ROLE",
        "SELECT set_config('role', '{other}', false)",
        "SET SESSION AUTHORIZATION postgres",
    ],
)
def test_a_caller_cannot_leave_its_role(served: Served, scratch: Scratch, escape: str) -> None:
    refused = served.call("alice", escape.format(other=scratch.roles["support"]))
    assert refused.get("isError")
    assert _rows(served.call("alice", "SELECT body FROM notes ORDER BY id")) == [["sales forecast"], ["sales pipeline"]]


def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + 15
    while not check():
        assert time.monotonic() < deadline, f"not within 15 s: {what}"
        time.sleep(0.2)


def test_a_caller_removed_from_the_map_is_refused_without_a_restart(served: Served, scratch: Scratch) -> None:
    before = served.role_map.read_text()
    assert not served.call("bob", "SELECT 1").get("isError")
    try:
        served.role_map.write_text(before.replace("support = ", "# support = "))
        _until(lambda: served.call("bob", "SELECT 1").get("isError"), "bob refused once out of the map")
        assert _rows(served.call("alice", "SELECT count(*) FROM notes")) == [[2]]
    finally:
        served.role_map.write_text(before)
        _until(lambda: not served.call("bob", "SELECT 1").get("isError"), "bob served again")
