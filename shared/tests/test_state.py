"""operations/state.py against a real `redis-server` of the test's own: leases that hold across processes and
expire when their holder dies, and memory serving while Redis is away, then Redis again."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from key_value.aio.stores.memory import MemoryStore
from mcp_server_core.operations.state import SharedState
from mcp_server_core.testing import REDIS_SERVER, free_port, redis_server

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None, reason="redis-server is not installed (apt-get install redis-server)"
)


@pytest.fixture
def redis() -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    with redis_server(port) as process:
        yield port, process


async def test_a_lease_holds_across_processes_and_expires_when_its_holder_dies(
    redis: tuple[int, subprocess.Popen[bytes]],
) -> None:
    redis_port, _ = redis
    url = f"redis://127.0.0.1:{redis_port}/0"
    first, second = SharedState(url, namespace="t"), SharedState(url, namespace="t")
    async with first.lease("calls:x", 1, ttl_s=30) as held:
        assert held is True
        async with second.lease("calls:x", 1, ttl_s=30) as also:
            assert also is False  # the other "host" counts the first one's lease
        async with second.lease("calls:y", 1, ttl_s=30) as other:
            assert other is True  # another principal's pool
    async with second.lease("calls:x", 1, ttl_s=30) as again:
        assert again is True  # given back when the block ended

    # A holder that dies never gives its lease back: it expires.
    dying = first.lease("calls:x", 1, ttl_s=0.3)
    assert await dying.__aenter__() is True
    deadline = time.monotonic() + 10
    while True:
        async with second.lease("calls:x", 1, ttl_s=30) as taken:
            if taken:
                break
        assert time.monotonic() < deadline, "the dead holder's lease never expired"
        await asyncio.sleep(0.05)
    await dying.__aexit__(None, None, None)
    await first.close()
    await second.close()


async def test_memory_serves_while_redis_is_away_and_keeps_what_it_was_given(
    redis: tuple[int, subprocess.Popen[bytes]],
) -> None:
    redis_port, process = redis
    url = f"redis://127.0.0.1:{redis_port}/0"
    state = SharedState(url, namespace="t", retry_after_s=0.05)
    store = state.key_value(MemoryStore())
    await store.put("before", {"v": 1}, collection="c", ttl=60)
    assert state.describe() == "redis"

    # Redis goes away (the fixture's process: stopped here, started again below on the same port).
    process.terminate()
    await asyncio.to_thread(process.wait, 10)  # gone: its port refuses connections now
    await store.put("during", {"v": 2}, collection="c", ttl=60)
    assert await store.get("during", collection="c") == {"v": 2}
    assert state.degraded
    assert state.describe().startswith("degraded")
    async with state.lease("calls:x", 1, ttl_s=5) as held:
        assert held is None  # nothing shared now: the caller's own count is all there is

    with redis_server(redis_port):
        deadline = time.monotonic() + 10
        while not await state.check():
            assert time.monotonic() < deadline, "Redis came back but the state store did not notice"
            await asyncio.sleep(0.05)
        assert state.describe() == "redis"
        assert await store.get("during", collection="c") == {"v": 2}  # written in memory, still read here
        await store.put("after", {"v": 3}, collection="c", ttl=60)
        other_host, other_server = SharedState(url, namespace="t"), SharedState(url, namespace="other")
        assert await other_host.key_value(MemoryStore()).get("after", collection="c") == {"v": 3}
        assert await other_server.key_value(MemoryStore()).get("after", collection="c") is None  # its own keys
        for opened in (state, other_host, other_server):
            await opened.close()


async def test_a_redis_that_never_answers_is_given_up_on_not_waited_for() -> None:
    """A blackholed Redis (the connection opens, nothing ever comes back): each operation ends at its timeout, then
    the circuit skips Redis; calls are served from memory, never held."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepted by the kernel, never read or answered
        state = SharedState(f"redis://127.0.0.1:{silent.getsockname()[1]}/0", namespace="t")
        store = state.key_value(MemoryStore())
        await store.put("k", {"v": 1}, collection="c", ttl=60)
        assert state.degraded
        assert await store.get("k", collection="c") == {"v": 1}
        async with state.lease("calls:x", 1, ttl_s=5) as held:
            assert held is None
        assert await state.publish({"kind": "tools", "scope": "x"}) is False
        await state.close()


# --- the history of cross writes (protocol/flows.py's SharedFlowStore) --------------------------------------------


async def test_what_a_session_read_on_one_host_is_known_on_the_other_bounded_and_expiring(
    redis: tuple[int, subprocess.Popen[bytes]],
) -> None:
    from mcp_server_core.conventions.places import Place
    from mcp_server_core.protocol.flows import LOST_COUNT, SharedFlowStore
    from redis.asyncio import Redis

    redis_port, _ = redis
    url = f"redis://127.0.0.1:{redis_port}/0"
    first, second = SharedState(url, namespace="t"), SharedState(url, namespace="t")
    on_a, on_b = SharedFlowStore(first, ttl_s=60, max_places=2), SharedFlowStore(second, ttl_s=60, max_places=2)
    private, public = Place("repository", "acme/private", "acme/private"), Place("repository", "acme/public")
    await on_a.add_sources("alice@example.com", [private])
    assert await on_b.sources("alice@example.com") == {private}
    assert await on_b.sources("bob") == frozenset()
    await on_b.add_confirmed("alice@example.com", public, [private])
    assert await on_a.confirmed("alice@example.com", public) == {private}
    assert await on_a.confirmed("alice@example.com", private) == frozenset()

    # Bounded: past two places, the lost-count marker (every later write asks).
    await on_a.add_sources("alice@example.com", [Place("repository", "x/1"), Place("repository", "x/2")])
    assert LOST_COUNT in await on_b.sources("alice@example.com")
    client = Redis(port=redis_port, decode_responses=True)
    keys = sorted(await client.keys("*"))
    assert len(keys) == 2, keys  # what alice read, what she confirmed (nothing for bob, who read nothing)
    assert all(k.startswith("mcp:t:flows:") for k in keys), keys  # the server's prefix, no principal
    assert not any("alice" in k for k in keys)
    expiries = [await client.pttl(k) for k in keys]
    assert all(0 < ms <= 60_000 for ms in expiries), expiries  # every key expires
    await client.aclose()
    for opened in (first, second):
        await opened.close()


async def test_while_redis_is_away_every_write_asks_and_what_was_read_reaches_redis_after(
    redis: tuple[int, subprocess.Popen[bytes]],
) -> None:
    from mcp_server_core.conventions.places import Place
    from mcp_server_core.protocol.flows import STORE_AWAY, SharedFlowStore

    redis_port, process = redis
    url = f"redis://127.0.0.1:{redis_port}/0"
    state = SharedState(url, namespace="t", retry_after_s=0.05)
    store = SharedFlowStore(state, ttl_s=60)
    assert await store.sources("alice") == frozenset()
    process.terminate()
    process.wait(timeout=10)

    # A session that read nothing known: its history cannot be read, so a write must ask (never pass unasked).
    assert STORE_AWAY in await store.sources("alice")
    secret = Place("folder", "/srv/private")
    await store.add_sources("alice", [secret])
    assert {secret, STORE_AWAY} <= await store.sources("alice")
    # The user's "allow" during the outage holds for what this host knows, never for the unknown.
    public = Place("folder", "/srv/public")
    await store.add_confirmed("alice", public, [secret, STORE_AWAY])
    assert await store.confirmed("alice", public) == {secret}

    with redis_server(redis_port):
        # Back: the host's background job sends what the outage kept here, without waiting for a call of its own.
        sending = asyncio.create_task(store.keep_sending())
        other_host = SharedState(url, namespace="t")
        elsewhere = SharedFlowStore(other_host, ttl_s=60)
        deadline = time.monotonic() + 10
        while await elsewhere.sources("alice") != {secret}:
            assert time.monotonic() < deadline, "what was read during the outage never reached Redis"
            await asyncio.sleep(0.05)
        sending.cancel()
        assert await store.sources("alice") == {secret}
        for opened in (state, other_host):
            await opened.close()
