"""The upstream-token verifier: what it costs upstream, what it keeps, what it lets the server send."""

from __future__ import annotations

import asyncio

import pytest
from fastmcp.server.auth import AccessToken, TokenVerificationError
from fastmcp.utilities.authorization import AuthContext
from mcp_server_core.auth.identity import principal, token_fingerprint
from mcp_server_core.auth.upstream import (
    UpstreamAccessToken,
    UpstreamIdentity,
    UpstreamTokenVerifier,
    upstream_allows_writes,
)
from mcp_server_core.conventions.errors import is_registered_secret, redact, register_secret

GOOD = {
    "tok-alice-" + "a" * 30: UpstreamIdentity("alice", True),
    "tok-reader-" + "r" * 30: UpstreamIdentity("carol", False),
}


class Upstream:
    """A stand-in upstream that counts what it was asked, and can be held or broken."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.gate: asyncio.Event | None = None
        self.down = False

    async def check(self, token: str) -> UpstreamIdentity | None:
        self.asked.append(token)
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise TokenVerificationError("upstream down")
        return GOOD.get(token)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


ALICE, READER = list(GOOD)


async def test_one_upstream_check_per_token_per_ttl() -> None:
    upstream, clock = Upstream(), Clock()
    verifier = UpstreamTokenVerifier("demo", upstream.check, ttl_s=60, clock=clock)
    for _ in range(5):
        accepted = await verifier.verify_token(ALICE)
        assert isinstance(accepted, UpstreamAccessToken)
    assert upstream.asked == [ALICE]
    clock.now += 61
    await verifier.verify_token(ALICE)
    assert upstream.asked == [ALICE, ALICE]
    assert verifier.checks == 2


async def test_callers_arriving_together_share_one_check() -> None:
    upstream = Upstream()
    upstream.gate = asyncio.Event()
    verifier = UpstreamTokenVerifier("demo", upstream.check)
    waiting = [asyncio.create_task(verifier.verify_token(ALICE)) for _ in range(10)]
    await asyncio.sleep(0)
    upstream.gate.set()
    results = await asyncio.gather(*waiting)
    assert upstream.asked == [ALICE]
    assert all(r is results[0] for r in results)


async def test_a_rejection_is_cached_and_a_failure_is_not() -> None:
    upstream = Upstream()
    verifier = UpstreamTokenVerifier("demo", upstream.check)
    unknown = "tok-nobody-" + "n" * 30
    assert await verifier.verify_token(unknown) is None
    assert await verifier.verify_token(unknown) is None
    assert upstream.asked == [unknown]
    upstream.down = True
    with pytest.raises(TokenVerificationError):
        await verifier.verify_token(ALICE)
    upstream.down = False
    assert await verifier.verify_token(ALICE) is not None
    assert upstream.asked == [unknown, ALICE, ALICE]


async def test_the_cache_is_bounded_and_forgets_the_tokens_it_let_go() -> None:
    upstream = Upstream()
    verifier = UpstreamTokenVerifier("demo", upstream.check, max_entries=2)
    configured = "tok-configured-" + "c" * 30
    register_secret(configured)  # the operator's own token, given as a bearer too: redacted for good
    tokens = [f"tok-many-{n}-" + "m" * 30 for n in range(5)]
    for token in [configured, *tokens]:
        await verifier.verify_token(token)
    assert len(verifier._verdicts) == 2
    assert [is_registered_secret(t) for t in tokens] == [False, False, False, True, True]
    assert is_registered_secret(configured)
    # Redacted from the moment it arrived, before the upstream saw it.
    assert tokens[-1] not in redact(f"upstream said: bad token {tokens[-1]}")


async def test_the_accepted_token_names_the_account_and_what_it_may_do() -> None:
    verifier = UpstreamTokenVerifier("demo", Upstream().check)
    writer = await verifier.verify_token(ALICE)
    reader = await verifier.verify_token(READER)
    assert isinstance(writer, UpstreamAccessToken)
    assert isinstance(reader, UpstreamAccessToken)
    assert principal(writer) == f"{token_fingerprint(ALICE)}/demo:alice"
    assert ALICE not in principal(writer)
    assert (writer.can_write, reader.can_write) == (True, False)
    tool: object = object()
    assert upstream_allows_writes(AuthContext(token=writer, component=tool))  # type: ignore[arg-type]
    assert not upstream_allows_writes(AuthContext(token=reader, component=tool))  # type: ignore[arg-type]
    # A bearer that is no upstream token (a JWT, a static token) is not judged here: its server's own rules hold.
    other = AccessToken(token="jwt", client_id="c", scopes=[])
    assert upstream_allows_writes(AuthContext(token=other, component=tool))  # type: ignore[arg-type]
