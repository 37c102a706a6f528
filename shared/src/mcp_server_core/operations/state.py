"""State shared between hosts: in Redis when `--state-url` names one, in this process's memory otherwise.

What lives here is what a client would otherwise lose, or get twice, when a gateway sends its requests to several
hosts: the events of resumable streams (a client resumes with Last-Event-ID on any host), call leases (one
client's `--max-calls-per-client` holds across every host) and per-principal choices (toolsets switched on,
announced on that principal's `subscriptions/listen` streams on every host).

Every key expires: a lease lives as long as the longest call may, a stream's events `EVENT_TTL_SECONDS`, a
choice a day, so a host that crashed holding a lease or a stream leaves nothing behind for ever.

Redis is a dependency that may fail. Each operation gets `TIMEOUT_S` (connect and read), never more; the first
failure opens a circuit for `RETRY_AFTER_S`, during which nothing waits on Redis at all and every host falls back
to its own memory (per-host limits, per-host events, per-host choices: the single-host behaviour). The change is
logged once each way, /readyz says `degraded`, and /metrics has `mcp_state_store_up` 0 and
`mcp_state_store_fallbacks_total`. No call is refused or lost because Redis is away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, SupportsFloat, TypeVar

from key_value.aio.protocols.key_value import AsyncKeyValue

from mcp_server_core.conventions.errors import redact

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["TIMEOUT_S", "SharedState", "StateUnavailable"]

logger = logging.getLogger(__name__)

TIMEOUT_S = 0.5
"""Longest one Redis operation may take (connect or answer): past it the host falls back, it never hangs."""
RETRY_AFTER_S = 2.0
"""After a failure, how long nothing is asked of Redis before it is tried again."""
PREFIX = "mcp:"
"""Every key and channel this family writes starts with it and the server's name (`mcp:db:`), so servers, and
other software, sharing one Redis stay apart."""

_Result = TypeVar("_Result")

# A lease is taken only if the principal holds fewer than the limit (leases past their expiry dropped first), in
# one step on the Redis side so two hosts cannot both take the last one.
_TAKE_LEASE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


class StateUnavailable(RuntimeError):
    """Redis did not answer (or its circuit is open): the caller falls back to this process's memory."""


class SharedState:
    """The state store of one process: Redis at `url`, or nothing shared (`url` None, the embedded default)."""

    def __init__(
        self,
        url: str | None,
        *,
        namespace: str = "server",
        timeout_s: float = TIMEOUT_S,
        retry_after_s: float = RETRY_AFTER_S,
    ) -> None:
        self.url = url
        self.prefix = f"{PREFIX}{namespace}:"
        """What this server's keys and channel start with."""
        self.timeout_s = timeout_s
        self.retry_after_s = retry_after_s
        self.origin = uuid.uuid4().hex
        """This process, so that it can skip its own announcements coming back from Redis."""
        self._client: Redis | None = None
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._metrics: tuple[Any, Any] | None = None

    @property
    def shared(self) -> bool:
        """Whether state is meant to be shared between hosts (`--state-url` given)."""
        return self.url is not None

    @property
    def degraded(self) -> bool:
        """Shared state is configured but unreachable now: this host counts and remembers alone."""
        return self._down_since is not None

    def describe(self) -> str:
        """For /readyz: where shared state lives now, in words an anonymous caller may read."""
        if not self.shared:
            return "memory"
        return (
            "degraded: the shared state store is unreachable; this host's memory serves" if self.degraded else "redis"
        )

    # --- the circuit ---------------------------------------------------------------------------------------

    def client(self) -> Redis:
        """The Redis client, made on first use in the running loop; StateUnavailable while the circuit is open."""
        if self.url is None:
            raise StateUnavailable("no --state-url")
        if self._down_since is not None and time.monotonic() < self._retry_at:
            self._count_fallback()
            raise StateUnavailable("the state store is unreachable")
        if self._client is None:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            self._client = Redis.from_url(
                self.url,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                # One try: a retry would multiply the time a call waits on a Redis that is away.
                retry=Retry(NoBackoff(), 0),
                retry_on_timeout=False,
                health_check_interval=30,
                decode_responses=True,  # what RedisStore reads values as
            )
        return self._client

    async def run(self, operation: Callable[[Redis], Awaitable[_Result]]) -> _Result:
        """`operation(client)` within `timeout_s`; StateUnavailable (the circuit opened) if Redis fails."""
        client = self.client()
        try:
            async with asyncio.timeout(self.timeout_s * 2):
                result = await operation(client)
        except Exception as exc:  # any failure of the store: a refused connection, a timeout, a protocol error
            self.failed(exc)
            raise StateUnavailable(str(exc)) from None
        self.succeeded()
        return result

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        self._retry_at = now + self.retry_after_s
        self._count_fallback()
        if self._down_since is None:
            self._down_since = now
            self._gauge(0)
            logger.warning(
                "state store %s unreachable (%s): falling back to this host's memory; call limits, resumable "
                "events and toolset choices are per host until it answers again",
                _safe_url(self.url),
                redact(f"{type(exc).__name__}: {exc}")[:200],
            )

    def succeeded(self) -> None:
        if self._down_since is not None:
            logger.warning(
                "state store %s reachable again after %.1f s: state is shared between hosts again",
                _safe_url(self.url),
                time.monotonic() - self._down_since,
            )
            self._down_since = None
            self._gauge(1)

    def expose_metrics(self) -> None:
        """Put `mcp_state_store_up` (1 now) and its fallback counter on /metrics from the start."""
        self._metric_objects()

    def _gauge(self, up: int) -> None:
        metrics = self._metric_objects()
        if metrics is not None:
            metrics[0].set(up)

    def _count_fallback(self) -> None:
        metrics = self._metric_objects()
        if metrics is not None:
            metrics[1].inc()

    def _metric_objects(self) -> tuple[Any, Any] | None:
        if self._metrics is None and self.shared:
            self._metrics = _state_metrics()
        return self._metrics

    async def check(self) -> bool:
        """Ping Redis (not past the circuit); True when shared state works now. For /readyz."""
        if not self.shared:
            return True
        with contextlib.suppress(StateUnavailable):
            await self.run(lambda client: client.ping())
        return not self.degraded

    async def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
            self._client = None

    # --- what the helpers keep here --------------------------------------------------------------------------

    def key_value(self, memory: AsyncKeyValue) -> AsyncKeyValue:
        """A key-value store for fastmcp (resumable events, session and per-principal state): Redis when shared,
        falling back to `memory` while Redis is away (`_RedisOrMemory`); `memory` itself when not shared."""
        if not self.shared:
            return memory
        from key_value.aio.stores.redis import RedisStore
        from key_value.aio.wrappers.prefix_collections import PrefixCollectionsWrapper

        return _RedisOrMemory(
            self, memory, lambda: PrefixCollectionsWrapper(RedisStore(client=self.client()), prefix=self.prefix)
        )

    @contextlib.asynccontextmanager
    async def lease(self, pool: str, limit: int, *, ttl_s: float) -> AsyncIterator[bool | None]:
        """Hold one of `limit` leases of `pool` (e.g. one principal's call slots) across every host while the block
        runs. Yields True if held, False if all are taken now, None if nothing is shared (or Redis is away: the
        caller relies on its own per-process count). A lease expires after `ttl_s` even if its host died."""
        if not self.shared:
            yield None
            return
        key = f"{self.prefix}lease:{pool}"
        member = uuid.uuid4().hex
        try:
            now = time.time()
            taken = await self.run(
                lambda client: client.eval(_TAKE_LEASE, 1, key, now, limit, now + ttl_s, member, int(ttl_s * 1000))
            )
        except StateUnavailable:
            yield None
            return
        if not taken:
            yield False
            return
        try:
            yield True
        finally:
            with contextlib.suppress(StateUnavailable):  # the lease expires on its own if Redis is away now
                await self.run(lambda client: client.zrem(key, member))

    def shared_secret(self, purpose: str) -> bytes | None:
        """32 random bytes every host of this server shares for `purpose`, made by the first host to ask; None when
        nothing is shared or Redis does not answer now (the caller then uses one of its own, and says so).

        Asked once, while a host starts, so synchronously, within `timeout_s`. The one key here that does not
        expire: it is configuration every host must agree on, not state a host leaves behind, and an expiry
        would split hosts running across it into two keys."""
        if self.url is None:
            return None
        from redis import Redis as SyncRedis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        key = f"{self.prefix}secret:{purpose}"
        try:
            client = SyncRedis.from_url(
                self.url,
                socket_timeout=self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                retry=Retry(NoBackoff(), 0),
                decode_responses=True,
            )
            try:
                client.set(key, secrets.token_hex(32), nx=True)
                value = client.get(key)
            finally:
                client.close()
        except Exception as exc:  # any failure of the store: the caller falls back
            self.failed(exc)
            return None
        try:
            secret = bytes.fromhex(str(value))
        except ValueError:
            secret = b""
        if len(secret) != 32:
            logger.warning("state store key %s does not hold a 32-byte secret: this host uses its own", key)
            return None
        return secret

    async def publish(self, message: Mapping[str, Any]) -> bool:
        """Tell every other host (False if it could not be told: Redis away, or nothing shared)."""
        if not self.shared:
            return False
        body = json.dumps({**message, "origin": self.origin})
        try:
            await self.run(lambda client: client.publish(self.prefix + "changes", body))
        except StateUnavailable:
            return False
        return True

    async def listen(self, deliver: Callable[[dict[str, Any]], None]) -> None:
        """Call `deliver` with every other host's announcement, until cancelled; reconnects after Redis failures."""
        if not self.shared:
            return
        while True:
            try:
                client = self.client()
                pubsub = client.pubsub()
                try:
                    await pubsub.subscribe(self.prefix + "changes")
                    while True:
                        # Read without the socket timeout: a quiet channel is not a failure.
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                        if message is None:
                            continue
                        with contextlib.suppress(ValueError, TypeError):
                            body = json.loads(message["data"])
                            if isinstance(body, dict) and body.get("origin") != self.origin:
                                deliver(body)
                finally:
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
            except asyncio.CancelledError:
                raise
            except StateUnavailable:
                pass
            except Exception as exc:  # the connection dropped: open the circuit, try again later
                self.failed(exc)
            await asyncio.sleep(self.retry_after_s)


class _RedisOrMemory:
    """A key-value store in Redis that falls back to this process's `memory` while Redis is away.

    Writes go to Redis, or to memory when it fails (or its circuit is open: then nothing waits on it). Reads ask
    Redis, then memory when Redis has nothing or fails, so what was written during an outage stays readable on
    this host once Redis is back. Deletes go to both."""

    def __init__(self, state: SharedState, memory: AsyncKeyValue, make: Callable[[], AsyncKeyValue]) -> None:
        self._state = state
        self._memory = memory
        self._make = make
        self._store: AsyncKeyValue | None = None

    async def _redis(self, operation: Callable[[AsyncKeyValue], Awaitable[_Result]]) -> _Result:
        self._state.client()  # StateUnavailable at once while the circuit is open
        if self._store is None:
            self._store = self._make()
        store = self._store
        try:
            async with asyncio.timeout(self._state.timeout_s * 2):
                result = await operation(store)
        except Exception as exc:  # any failure of the store: a refused connection, a timeout, a protocol error
            self._state.failed(exc)
            raise StateUnavailable(str(exc)) from None
        self._state.succeeded()
        return result

    async def _either(
        self, operation: Callable[[AsyncKeyValue], Awaitable[_Result]], found: Callable[[_Result], bool]
    ) -> _Result:
        """What Redis answers if `found` says it holds something, else what memory answers."""
        with contextlib.suppress(StateUnavailable):
            answer = await self._redis(operation)
            if found(answer):
                return answer
        return await operation(self._memory)

    async def get(self, key: str, *, collection: str | None = None) -> dict[str, Any] | None:
        return await self._either(lambda store: store.get(key=key, collection=collection), _held)

    async def get_many(self, keys: Sequence[str], *, collection: str | None = None) -> list[dict[str, Any] | None]:
        found = await self._either(lambda store: store.get_many(keys=keys, collection=collection), _any_held)
        if None in found:  # some only in memory (written while Redis was away)
            remembered = await self._memory.get_many(keys=keys, collection=collection)
            found = [mine if mine is not None else kept for mine, kept in zip(found, remembered, strict=True)]
        return found

    async def ttl(self, key: str, *, collection: str | None = None) -> tuple[dict[str, Any] | None, float | None]:
        return await self._either(lambda store: store.ttl(key=key, collection=collection), _held_with_ttl)

    async def ttl_many(
        self, keys: Sequence[str], *, collection: str | None = None
    ) -> list[tuple[dict[str, Any] | None, float | None]]:
        return await self._either(lambda store: store.ttl_many(keys=keys, collection=collection), _any_held_with_ttl)

    async def put(
        self, key: str, value: Mapping[str, Any], *, collection: str | None = None, ttl: SupportsFloat | None = None
    ) -> None:
        try:
            await self._redis(lambda store: store.put(key=key, value=value, collection=collection, ttl=ttl))
        except StateUnavailable:
            await self._memory.put(key=key, value=value, collection=collection, ttl=ttl)

    async def put_many(
        self,
        keys: Sequence[str],
        values: Sequence[Mapping[str, Any]],
        *,
        collection: str | None = None,
        ttl: SupportsFloat | None = None,
    ) -> None:
        try:
            await self._redis(lambda store: store.put_many(keys=keys, values=values, collection=collection, ttl=ttl))
        except StateUnavailable:
            await self._memory.put_many(keys=keys, values=values, collection=collection, ttl=ttl)

    async def delete(self, key: str, *, collection: str | None = None) -> bool:
        deleted = await self._memory.delete(key=key, collection=collection)
        with contextlib.suppress(StateUnavailable):
            deleted = await self._redis(lambda store: store.delete(key=key, collection=collection)) or deleted
        return deleted

    async def delete_many(self, keys: Sequence[str], *, collection: str | None = None) -> int:
        deleted = await self._memory.delete_many(keys=keys, collection=collection)
        with contextlib.suppress(StateUnavailable):
            deleted = max(deleted, await self._redis(lambda store: store.delete_many(keys=keys, collection=collection)))
        return deleted


def _held(value: dict[str, Any] | None) -> bool:
    return value is not None


def _any_held(values: list[dict[str, Any] | None]) -> bool:
    return any(value is not None for value in values)


def _held_with_ttl(entry: tuple[dict[str, Any] | None, float | None]) -> bool:
    return entry[0] is not None


def _any_held_with_ttl(entries: list[tuple[dict[str, Any] | None, float | None]]) -> bool:
    return any(value is not None for value, _ in entries)


_STATE_METRICS: tuple[Any, Any] | None = None


def _state_metrics() -> tuple[Any, Any]:
    """The state store's gauge and counter, made once per process (prometheus-client refuses a second)."""
    global _STATE_METRICS
    if _STATE_METRICS is None:
        from prometheus_client import Counter, Gauge

        up = Gauge(
            "mcp_state_store_up",
            "1 while the shared state store (--state-url) answers, 0 while this host falls back to its memory",
            multiprocess_mode="min",
        )
        up.set(1)
        fallbacks = Counter(
            "mcp_state_store_fallbacks", "Operations served from this host's memory because the state store was away"
        )
        _STATE_METRICS = (up, fallbacks)
    return _STATE_METRICS


def _safe_url(url: str | None) -> str:
    """The URL without its password (redis://:secret@host names one)."""
    if url is None:
        return "(none)"
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
