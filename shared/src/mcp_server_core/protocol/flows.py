"""Confirmation of cross writes: a session that read one place and writes another asks its user first.

The attack this stops (the "toxic flow"): a public issue tells the agent to copy a private repository's README
into a public issue; the agent reads the issue, reads the README, and writes it out. Every step is a tool call the
token may make, so no allow-list of tools stops it; what gives it away is the flow, content read from one place
written to another. So each tool declares the place a call reads and the place it writes (conventions/places.py),
each resource the place a read of it reads (`CrossWrites.resources_read`: a file read as a resource counts as
read_file does), a session remembers the places it read, and a write whose target is none of them is put to the
user through an MCP elicitation naming what was read and where the write goes:

- accept: the write goes on, and this target is confirmed for those sources for the rest of the session;
- decline or cancel (or no answer within `CONFIRM_TIMEOUT_S`): refused, nothing written;
- a client without elicitation (its capabilities lack `elicitation`): refused, with how to allow it
  (`--allow-cross-writes`, or the target in `--allow-writes-to`).

The handshake era asks with `ctx.elicit` while the call waits. A 2026-07-28 request has no channel for the
server to ask on, so its first leg answers with the question (an `InputRequiredResult`, SEP-2322) and the client
calls again carrying the user's answer; the answer counts only for the question it was given (the request state
names the tool, the sources and the target, sealed by the framework).

What a session read is kept per session on the handshake era and per principal where there is no session to key
on (the 2026-07-28 era, stateless HTTP): a principal's sessions then share one history, which asks more, never
less. It lives behind `FlowStore`: `MemoryFlowStore` is bounded (sessions remembered, places per session) and,
when full, forgets the least recent session or records that it lost count, which makes every later write of that
session ask. With `--state-url`, `SharedFlowStore` keeps it in Redis, so a 2026-07-28 client whose requests a
gateway spreads over hosts is asked on host B about what it read on host A. While Redis is away its history
cannot be known, so every write asks (or is refused where the client cannot be asked): an outage never lets a
write pass unasked. What a host records meanwhile is kept in its memory and written to Redis within seconds of its
answering again (in those seconds, the other hosts do not know it).

Each confirmation is counted (`mcp_cross_write_confirmations_total{outcome}` on /metrics) and named on its call's
audit line (`cross_write_confirmation`): accepted, declined, cancelled, timed_out or refused_no_elicitation.

The command-line track has none of this: each command is its own process, run by the user at a shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from mcp_server_core.auth.identity import caller
from mcp_server_core.conventions.errors import Refused, ToolFailure, Unavailable
from mcp_server_core.conventions.places import Place, PlaceOf, Places, ResourcePlaceOf
from mcp_server_core.conventions.tools import ToolDefinition
from mcp_server_core.operations.audit import audit_confirmation
from mcp_server_core.operations.metrics import record_cross_write_confirmation
from mcp_server_core.operations.state import SharedState, StateUnavailable

if TYPE_CHECKING:
    from fastmcp import Context
    from redis.asyncio import Redis

__all__ = ["CONFIRM_TIMEOUT_S", "AskFirst", "CrossWrites", "FlowStore", "MemoryFlowStore", "SharedFlowStore"]

logger = logging.getLogger(__name__)

CONFIRM_TIMEOUT_S = 300.0
"""How long a write waits for its user's answer; past it, the write is refused as if declined."""

LOST_COUNT = Place("places", "more than this server remembers for one session", "more places than remembered")
"""Recorded when a session read more places than its store keeps: no target is ever that place, so every write
of the session asks (forgetting a source would let a write pass unasked)."""


class FlowStore(Protocol):
    """Where what each session read, and the writes its user confirmed, are kept (in memory, or shared)."""

    async def sources(self, key: str) -> frozenset[Place]:
        """The places session `key` read."""
        ...

    async def add_sources(self, key: str, places: Iterable[Place]) -> None: ...

    async def confirmed(self, key: str, target: Place) -> frozenset[Place]:
        """The sources whose flow into `target` the user of session `key` already confirmed."""
        ...

    async def add_confirmed(self, key: str, target: Place, sources: Iterable[Place]) -> None: ...


class _Session:
    __slots__ = ("confirmed", "sources")

    def __init__(self) -> None:
        self.sources: set[Place] = set()
        self.confirmed: dict[Place, set[Place]] = {}


class MemoryFlowStore:
    """A `FlowStore` in this process: at most `max_sessions` sessions (the least recently used forgotten first)
    and `max_places` places each."""

    def __init__(self, *, max_sessions: int = 10_000, max_places: int = 256) -> None:
        self.max_sessions = max_sessions
        self.max_places = max_places
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def _get(self, key: str, *, create: bool) -> _Session | None:
        session = self._sessions.get(key)
        if session is None and create:
            session = self._sessions[key] = _Session()
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        if session is not None:
            self._sessions.move_to_end(key)
        return session

    async def sources(self, key: str) -> frozenset[Place]:
        session = self._get(key, create=False)
        return frozenset(session.sources) if session else frozenset()

    async def add_sources(self, key: str, places: Iterable[Place]) -> None:
        session = self._get(key, create=True)
        assert session is not None
        for place in places:
            if len(session.sources) >= self.max_places:
                session.sources.add(LOST_COUNT)
                return
            session.sources.add(place)

    async def confirmed(self, key: str, target: Place) -> frozenset[Place]:
        session = self._get(key, create=False)
        return frozenset(session.confirmed.get(target, ())) if session else frozenset()

    async def add_confirmed(self, key: str, target: Place, sources: Iterable[Place]) -> None:
        session = self._get(key, create=True)
        assert session is not None
        if target not in session.confirmed and len(session.confirmed) >= self.max_places:
            return  # not remembered: the next such write asks again
        session.confirmed.setdefault(target, set()).update(sources)


STORE_AWAY = Place("places", "unknown: the shared state store is unreachable", "read on other hosts (unknown now)")
"""Among a session's sources while Redis is away: what it read on other hosts cannot be known, so every write asks."""
FLUSH_PER_OPERATION = 8
"""Histories kept here during an outage that each Redis operation sends along, once Redis answers again."""
FLOW_TTL_S = 86_400.0
"""How long a history in Redis outlives its last use: a day, or the session idle timeout if longer."""

# Each place at most once (by kind and key, as places compare); past `max` places, the lost-count marker instead.
_ADD_SOURCES = """
for i = 5, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then
    redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
    break
  end
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
# A target's confirmed sources, merged into what was there; past `max` targets, not remembered (the next asks).
_ADD_CONFIRMED = """
local have = redis.call('HGET', KEYS[1], ARGV[3])
if not have and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
local merged, list = {}, {}
if have then for _, s in ipairs(cjson.decode(have)) do merged[s] = true end end
for i = 4, #ARGV do merged[ARGV[i]] = true end
for s in pairs(merged) do
  if #list > tonumber(ARGV[1]) then break end
  table.insert(list, s)
end
redis.call('HSET', KEYS[1], ARGV[3], cjson.encode(list))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""


class SharedFlowStore:
    """A `FlowStore` in Redis (`--state-url`), so every host knows what a session or principal read on the others.

    Two hashes per history, under the server's prefix (`mcp:<server>:flows:<digest>:sources` and `:confirmed`;
    the digest of the principal and session, never the principal itself), each bounded like `MemoryFlowStore`'s
    (`max_places` places, `max_places` confirmed targets) and expiring `ttl_s` after its last use.

    Redis away (SharedState's circuit: one timeout, then no waiting at all): the sources answered are this host's
    memory plus `STORE_AWAY`, so every write asks; what was read is kept in memory and written to Redis within
    `retry_after_s` of its answering again (`keep_sending`), so the other hosts learn it too."""

    def __init__(self, state: SharedState, *, ttl_s: float = FLOW_TTL_S, max_places: int = 256) -> None:
        self.state = state
        self.ttl_ms = int(ttl_s * 1000)
        self.max_places = max_places
        self.memory = MemoryFlowStore(max_places=max_places)
        """What this host read and confirmed while Redis was away."""
        self._unsent: OrderedDict[str, None] = OrderedDict()
        """Histories with reads in `memory` that Redis has not been told (bounded like memory's sessions)."""

    def _keys(self, key: str) -> tuple[str, str]:
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        base = f"{self.state.prefix}flows:{digest}:"
        return base + "sources", base + "confirmed"

    async def _run(self, operation: Any) -> Any:
        """`operation(client)` in Redis after sending what an outage kept here; StateUnavailable if Redis fails."""
        await self._send_unsent(FLUSH_PER_OPERATION)  # a few each time: no call waits on them all
        return await self.state.run(operation)

    async def _send_unsent(self, most: int) -> None:
        for _ in range(min(len(self._unsent), most)):
            key = next(iter(self._unsent))
            await self.state.run(partial(self._send_sources, key=key, places=await self.memory.sources(key)))
            self._unsent.pop(key, None)

    async def send_unsent(self) -> None:
        """Send Redis every history an outage kept here, if it answers now. Until it is sent, another host does not
        know those reads, so the host calls this every few seconds (`keep_sending`), not only on its next call."""
        with contextlib.suppress(StateUnavailable):
            await self._send_unsent(len(self._unsent))

    async def keep_sending(self) -> None:
        """`send_unsent` every `retry_after_s`, for as long as the server serves (a background job)."""
        while True:
            await asyncio.sleep(self.state.retry_after_s)
            if self._unsent:
                await self.send_unsent()

    def _send_sources(self, client: Redis, key: str, places: Iterable[Place]) -> Awaitable[Any]:
        sources, _ = self._keys(key)
        pairs = [value for place in places for value in (_field(place), place.label)]
        return client.eval(
            _ADD_SOURCES, 1, sources, self.max_places, self.ttl_ms, _field(LOST_COUNT), LOST_COUNT.label, *pairs
        )

    async def sources(self, key: str) -> frozenset[Place]:
        sources, _ = self._keys(key)

        async def read(client: Redis) -> Any:
            async with client.pipeline(transaction=False) as pipe:
                pipe.hgetall(sources)
                pipe.pexpire(sources, self.ttl_ms)
                return (await pipe.execute())[0]

        mine = await self.memory.sources(key)
        try:
            stored: dict[str, str] = await self._run(read)
        except StateUnavailable:
            return mine | {STORE_AWAY}
        return mine | {_place(name, label) for name, label in stored.items()}

    async def add_sources(self, key: str, places: Iterable[Place]) -> None:
        places = list(places)
        try:
            await self._run(lambda client: self._send_sources(client, key, places))
        except StateUnavailable:
            await self.memory.add_sources(key, places)
            self._unsent[key] = None
            self._unsent.move_to_end(key)
            while len(self._unsent) > self.memory.max_sessions:
                self._unsent.popitem(last=False)

    async def confirmed(self, key: str, target: Place) -> frozenset[Place]:
        _, confirmed = self._keys(key)

        async def read(client: Redis) -> Any:
            async with client.pipeline(transaction=False) as pipe:
                pipe.hget(confirmed, _field(target))
                pipe.pexpire(confirmed, self.ttl_ms)
                return (await pipe.execute())[0]

        mine = await self.memory.confirmed(key, target)
        try:
            stored: str | None = await self._run(read)
        except StateUnavailable:
            return mine
        if not stored:
            return mine
        try:
            names = json.loads(stored)
        except ValueError:
            return mine
        # An entry this family did not write confirms nothing (a place that cannot be read is no answer of a user).
        return mine | {place for name in names if isinstance(name, str) and (place := _place(name, "")) != LOST_COUNT}

    async def add_confirmed(self, key: str, target: Place, sources: Iterable[Place]) -> None:
        _, confirmed = self._keys(key)
        # "What other hosts saw while Redis was away" is never confirmed once for all: what it stands for may grow
        # after the answer, so each write during an outage asks again.
        sources = [place for place in sources if place != STORE_AWAY]
        names = [_field(place) for place in sources]
        try:
            await self._run(
                lambda client: client.eval(
                    _ADD_CONFIRMED, 1, confirmed, self.max_places, self.ttl_ms, _field(target), *names
                )
            )
        except StateUnavailable:  # the user's answer holds on this host; elsewhere the next such write asks again
            await self.memory.add_confirmed(key, target, sources)


def _field(place: Place) -> str:
    return json.dumps([place.kind, place.key], separators=(",", ":"))


def _place(field: str, label: str) -> Place:
    try:
        kind, key = json.loads(field)
    except (ValueError, TypeError):
        return LOST_COUNT  # not one this family wrote: count it as lost, so writes ask
    return Place(str(kind), str(key), label)


class CrossWrites:
    """The confirmation of cross writes for one server: `ReferenceServer` calls `guard` before each tool call and
    `record` after each that succeeded."""

    def __init__(self, store: FlowStore | None = None) -> None:
        self.store: FlowStore = store or MemoryFlowStore()
        self.allow_everywhere = False
        """`--allow-cross-writes`: no write asks."""
        self.allowed_targets: list[str] = []
        """`--allow-writes-to`: targets (a repository, a channel, a folder) no write to asks about."""
        self.sessions = True
        """False where the transport keeps no session (stateless HTTP): the principal keys the history."""
        self._resources: list[tuple[str, ResourcePlaceOf]] = []

    def resources_read(self, prefix: str, reads: ResourcePlaceOf) -> None:
        """Declare where a read of the resources whose URI starts with `prefix` reads (`reads(uri)`, like a tool's
        `reads=`): `ReferenceServer` records it after each resources/read that succeeded, so content a client read
        as a resource counts as the same content read by a tool. The longest matching prefix decides."""
        self._resources.append((prefix, reads))
        self._resources.sort(key=lambda entry: len(entry[0]), reverse=True)

    async def resource_places(self, uri: str) -> list[Place]:
        """The places a read of `uri` reads, as its server declared them (none for an undeclared URI)."""
        # Case aside: a URI's scheme is case-insensitive (RFC 3986), and `FILE:///x` must not read unrecorded.
        declared = next(
            (reads for prefix, reads in self._resources if uri.casefold().startswith(prefix.casefold())), None
        )
        if declared is None:
            return []
        try:
            given = declared(uri)
            return _as_list(await given if inspect.isawaitable(given) else given)
        except ToolFailure:
            pass  # the read will most likely fail the same way, and a failed read is recorded as nothing
        except Exception:
            logger.exception("the place of the resource %r could not be determined", uri)
        # Should the read succeed all the same, what it read is unknown: a place no target is, so writes ask.
        digest = hashlib.sha256(uri.encode(errors="surrogateescape")).hexdigest()[:16]  # a URI of any length
        return [Place("place", f"resource {digest}", "a resource whose source is unknown")]

    def allow(self, *, everywhere: bool = False, targets: Sequence[str] = ()) -> None:
        self.allow_everywhere = everywhere
        self.allowed_targets = [t for t in targets if t.strip()]

    async def guard(self, definition: ToolDefinition, arguments: Mapping[str, Any], ctx: Context | None) -> list[Place]:
        """The places this call reads; raises `Refused` when it writes where its session did not read and the user
        did not confirm it (or could not be asked)."""
        reads = await _places(definition, definition.reads, arguments, reading=True)
        if definition.writes is None or self.allow_everywhere:
            return reads
        targets = await _places(definition, definition.writes, arguments, reading=False)
        key = self._key(ctx)
        # The call's own reads count: copying from one folder to another in one call is the same flow.
        sources = (await self.store.sources(key)) | set(reads)
        for target in targets:
            if any(target.named(entry) for entry in self.allowed_targets):
                continue
            elsewhere = sources - {target} - await self.store.confirmed(key, target)
            if elsewhere:
                await self._confirm(definition.name, sorted(elsewhere, key=str), target, key, ctx)
        return reads

    async def record(self, reads: list[Place], ctx: Context | None) -> None:
        """The call succeeded: what it read is now part of its session's history."""
        if reads:
            await self.store.add_sources(self._key(ctx), reads)

    def _key(self, ctx: Context | None) -> str:
        who = caller()
        if ctx is None or not self.sessions or ctx._is_modern_protocol():
            return who
        try:
            return f"{who} session {ctx.session_id}"
        except RuntimeError:
            return who

    async def _confirm(self, tool: str, sources: list[Place], target: Place, key: str, ctx: Context | None) -> None:
        read = ", ".join(str(s) for s in sources[:5]) + (f" and {len(sources) - 5} more" if len(sources) > 5 else "")
        what = f"{tool} would write to {target} after this session read {read}"
        how = (
            f"To allow it, ask the operator to start the server with --allow-writes-to naming {target} or with "
            "--allow-cross-writes (any target), or use a client that can ask you to confirm (MCP elicitation)."
        )
        if ctx is None or not _can_ask(ctx):
            _count("refused_no_elicitation")
            raise Refused(
                f"Refused: {what}, and this client cannot ask its user to confirm. Nothing was written.", hint=how
            )
        question = (
            f"{what}. Content read there (which others may have written) could be carried into {target}. "
            "Allow this write?"
        )
        if ctx._is_modern_protocol():
            outcome = _answer_in_request(ctx, question, _asked(tool, sources, target))
        else:
            try:
                answer = await asyncio.wait_for(ctx.elicit(question, bool, response_title=ALLOW), CONFIRM_TIMEOUT_S)
            except TimeoutError:
                _count("timed_out")
                raise Refused(
                    f"Refused: {what}, and its user did not answer within {CONFIRM_TIMEOUT_S:g} s. Nothing was "
                    "written.",
                    hint=how,
                ) from None
            outcome = _outcome(answer.action, getattr(answer, "data", None))
        _count(outcome)
        if outcome == "accepted":
            await self.store.add_confirmed(key, target, sources)
            logger.info("cross write confirmed: %s", what)
            return
        raise Refused(
            f"Refused: {what}, and its user declined. Nothing was written.",
            hint="Do not retry unless the user asks for this write.",
        )


def _outcome(action: str, value: object) -> str:
    """What the user answered: accepted only for an accept whose value is yes (an accept of "no" declines)."""
    if action == "accept":
        return "accepted" if value is True else "declined"
    return "cancelled" if action == "cancel" else "declined"


def _count(outcome: str) -> None:
    """One confirmation's outcome, on /metrics and on its call's audit line (the last one, if a call asked twice)."""
    record_cross_write_confirmation(outcome)
    audit_confirmation(outcome)


ALLOW = "Allow this write"
_ASK_KEY = "confirm_cross_write"


class AskFirst(Exception):
    """A 2026-07-28 call's first leg: the answer is a question for its user (an `InputRequiredResult`, SEP-2322);
    the client asks and calls again with the answer, and the call goes on or is refused then."""

    def __init__(self, input_required: Any) -> None:
        super().__init__("input required")
        self.input_required = input_required

    def result(self) -> Any:
        from fastmcp.tools.base import InputRequiredToolResult

        return InputRequiredToolResult(self.input_required)


def _asked(tool: str, sources: list[Place], target: Place) -> str:
    """What was asked, as the request state the client sends back: an answer counts only for the same question
    (the framework seals the state, so a client cannot make one up)."""
    question = json.dumps([tool, [[s.kind, s.key] for s in sources], [target.kind, target.key]])
    return hashlib.sha256(question.encode()).hexdigest()


def _answer_in_request(ctx: Context, question: str, asked: str) -> str:
    """The user's answer carried by this 2026-07-28 request (`_outcome`), or `AskFirst` when it carries none for
    this question."""
    import mcp_types
    from fastmcp.server.elicitation import parse_elicit_response_type

    responses = ctx.input_responses or {}
    answer = responses.get(_ASK_KEY)
    if isinstance(answer, mcp_types.ElicitResult) and ctx.request_state == asked:
        return _outcome(answer.action, (answer.content or {}).get("value"))
    schema = parse_elicit_response_type(bool, response_title=ALLOW).schema
    params = mcp_types.ElicitRequestFormParams(message=question, requested_schema=schema)
    raise AskFirst(
        mcp_types.InputRequiredResult(
            input_requests={_ASK_KEY: mcp_types.ElicitRequest(params=params)}, request_state=asked
        )
    )


def _can_ask(ctx: Context) -> bool:
    """Whether this request's client can be asked: `elicitation` in its capabilities (the handshake era's, or the
    ones a 2026-07-28 request declares)."""
    try:
        capabilities = ctx.session.client_capabilities
    except (RuntimeError, AttributeError):
        return False
    return capabilities is not None and capabilities.elicitation is not None


async def _places(
    definition: ToolDefinition, declared: PlaceOf | None, arguments: Mapping[str, Any], *, reading: bool
) -> list[Place]:
    if declared is None:
        return []
    try:
        given = declared(arguments)
        found: Places = await given if inspect.isawaitable(given) else given
    except Unavailable:
        # The upstream is down or limiting: the tool would fail the same way, so the client hears why now, and the
        # upstream is asked once per call (with its retry), not once here and again by the tool.
        raise
    except ToolFailure:
        if not reading:
            raise  # the tool would fail the same way: the client hears why
        # A read may go on without it (read_many_files reports a missing file and reads the others).
        return [Place("place", f"read by {definition.name}", f"what {definition.name} read")]
    except Exception:
        # A declaration that breaks (a disk error while resolving a path) must not let a write pass unasked, nor
        # reach the client as an internal error: the place is unknown, so it matches no other.
        logger.exception("the places of %s could not be determined", definition.name)
        unknown = "read" if reading else "written"
        return [Place("place", f"{unknown} by {definition.name}", f"what {definition.name} {unknown}")]
    return _as_list(found)


def _as_list(found: Places) -> list[Place]:
    if found is None:
        return []
    if isinstance(found, Place):
        return [found]
    return list(found)
