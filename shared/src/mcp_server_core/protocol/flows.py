"""Confirmation of cross writes: a session that read one place and writes another asks its user first.

The attack this stops (the "toxic flow"): a public issue tells the agent to copy a private repository's README
into a public issue; the agent reads the issue, reads the README, and writes it out. Every step is a tool call the
token may make, so no allow-list of tools stops it; what gives it away is the flow, content read from one place
written to another. So each tool declares the place a call reads and the place it writes (conventions/places.py),
a session remembers the places it read, and a write whose target is none of them is put to the user through an
MCP elicitation naming what was read and where the write goes:

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
less. It lives behind `FlowStore`, so a shared store (Redis) can hold it for many workers; `MemoryFlowStore` is
bounded (sessions remembered, places per session) and, when full, forgets the least recent session or records
that it lost count, which makes every later write of that session ask.

The command-line track has none of this: each command is its own process, run by the user at a shell.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from mcp_server_core.auth.identity import caller
from mcp_server_core.conventions.errors import Refused, ToolFailure
from mcp_server_core.conventions.places import Place, PlaceOf, Places
from mcp_server_core.conventions.tools import ToolDefinition

if TYPE_CHECKING:
    from fastmcp import Context

__all__ = ["CONFIRM_TIMEOUT_S", "AskFirst", "CrossWrites", "FlowStore", "MemoryFlowStore"]

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
            raise Refused(
                f"Refused: {what}, and this client cannot ask its user to confirm. Nothing was written.", hint=how
            )
        question = (
            f"{what}. Content read there (which others may have written) could be carried into {target}. "
            "Allow this write?"
        )
        if ctx._is_modern_protocol():
            accepted = _answer_in_request(ctx, question, _asked(tool, sources, target))
        else:
            try:
                answer = await asyncio.wait_for(ctx.elicit(question, bool, response_title=ALLOW), CONFIRM_TIMEOUT_S)
            except TimeoutError:
                raise Refused(
                    f"Refused: {what}, and its user did not answer within {CONFIRM_TIMEOUT_S:g} s. Nothing was "
                    "written.",
                    hint=how,
                ) from None
            accepted = answer.action == "accept" and getattr(answer, "data", None) is True
        if accepted:
            await self.store.add_confirmed(key, target, sources)
            logger.info("cross write confirmed: %s", what)
            return
        raise Refused(
            f"Refused: {what}, and its user declined. Nothing was written.",
            hint="Do not retry unless the user asks for this write.",
        )


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


def _answer_in_request(ctx: Context, question: str, asked: str) -> bool:
    """The user's answer carried by this 2026-07-28 request, or `AskFirst` when it carries none for this question."""
    import mcp_types
    from fastmcp.server.elicitation import parse_elicit_response_type

    responses = ctx.input_responses or {}
    answer = responses.get(_ASK_KEY)
    if isinstance(answer, mcp_types.ElicitResult) and ctx.request_state == asked:
        return answer.action == "accept" and (answer.content or {}).get("value") is True
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
    except ToolFailure:
        if not reading:
            raise  # the tool would fail the same way: the client hears why
        return [Place("place", f"read by {definition.name}", f"what {definition.name} read")]
    except Exception:
        # A declaration that breaks (a disk error while resolving a path) must not let a write pass unasked, nor
        # reach the client as an internal error: the place is unknown, so it matches no other.
        logger.exception("the places of %s could not be determined", definition.name)
        unknown = "read" if reading else "written"
        return [Place("place", f"{unknown} by {definition.name}", f"what {definition.name} {unknown}")]
    if found is None:
        return []
    if isinstance(found, Place):
        return [found]
    return list(found)
