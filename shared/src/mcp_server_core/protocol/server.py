"""`ReferenceServer`: FastMCP with the family's error split, notifications and compact listings.

This is the one place where errors are translated to the wire:
- an unknown tool is a JSON-RPC error -32602 (fastmcp 4.2.3 answers it with an isError result);
- arguments that fail the input schema are an isError result naming each bad field (SEP-1303, 2025-11-25);
- a `ToolFailure` raised by domain code is an isError result with its actionable message;
- any other exception is an isError result with a short masked message, its traceback only in the log;
- a call that outlives `call_timeout_s` is an isError result at the deadline, whatever it waits on (a resource
  read or a prompt, an error saying so), and each takes one of its client's call slots;
- every message is redacted of secrets.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import (
    DisabledError,
    FastMCPError,
    NotFoundError,
    PromptError,
    ResourceError,
    ToolError,
    ValidationError,
)
from fastmcp.prompts.base import PromptResult
from fastmcp.resources.base import ResourceResult
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.versions import VersionSpec
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
    methods,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError as PydanticValidationError

from mcp_server_core.auth.identity import caller
from mcp_server_core.conventions.budget import cut_text, fit_structure, json_size
from mcp_server_core.conventions.errors import (
    RESOURCE_FAILED,
    InvalidArgument,
    NotFound,
    RateLimited,
    ToolFailure,
    did_you_mean,
    failure_text,
)
from mcp_server_core.conventions.tools import DEFAULT_BUDGET, call_context, compact_schema
from mcp_server_core.operations.audit import AuditTrail, note_failure
from mcp_server_core.operations.health import Readiness
from mcp_server_core.operations.state import SharedState
from mcp_server_core.operations.tracing import annotate_call
from mcp_server_core.protocol.cancellation import finish_cancelling, unwatch_call, watch_call
from mcp_server_core.protocol.client_log import DEFAULT_CLIENT_LEVEL, forward_to_clients
from mcp_server_core.protocol.flows import AskFirst, CrossWrites
from mcp_server_core.protocol.notifications import ChangeHub, listening_scope
from mcp_server_core.protocol.progress import start_reporting, stop_reporting
from mcp_server_core.protocol.toolsets import Toolset, Toolsets, add_discovery, is_dynamic, parse_toolsets

__all__ = ["ReferenceServer"]

_Done = TypeVar("_Done")
_Listed = TypeVar("_Listed", mcp_types.Tool, mcp_types.Resource, mcp_types.ResourceTemplate, mcp_types.Prompt)

logger = logging.getLogger(__name__)

LEASE_POLL_S = 0.02
"""First pause before asking again for a call lease another host holds; doubled up to `LEASE_POLL_MAX_S`."""
LEASE_POLL_MAX_S = 0.25
LEASE_GRACE_S = 10.0
"""A call lease outlives the call timeout by this much: the answer still has to be written."""
LEASE_WITHOUT_TIMEOUT_S = 3600.0
"""A call lease's life when calls have no timeout (--call-timeout-s unset)."""

DISCOVERY_HINT = " More tools: list_toolsets, then enable_toolset."
"""What the instructions of a `--toolsets dynamic` server add, and drop where the discovery tools are left out."""

CANCEL_GRACE_S = 1.0
"""How long a stopping server waits for the cancels of its abandoned calls to be delivered."""


class ReferenceServer(FastMCP[Any]):
    """A FastMCP server that follows the family's conventions; build one per server in its `server.py`."""

    def __init__(
        self,
        name: str,
        *,
        version: str,
        instructions: str | None = None,
        toolsets: Sequence[Toolset] = (),
        enabled_toolsets: str | Iterable[str] | None = None,
        read_only: bool = False,
        debounce: float = 0.05,
        **fastmcp_options: Any,
    ) -> None:
        # Set before FastMCP's constructor, which registers the protocol handlers that use it.
        self.changes = ChangeHub(debounce=debounce)
        self._background: list[Callable[[], Awaitable[None]]] = []
        self._shutdown: list[Callable[[], Awaitable[None] | None]] = []
        self._own_lifespan: Callable[[Any], AbstractAsyncContextManager[Any]] | None = fastmcp_options.pop(
            "lifespan", None
        )
        super().__init__(
            name,
            instructions,
            version=version,
            lifespan=self._family_lifespan,
            # Masked: an unexpected exception's text may hold paths, SQL or secrets; its traceback goes to the log.
            mask_error_details=True,
            **{"client_log_level": DEFAULT_CLIENT_LEVEL, **fastmcp_options},
        )
        self.readiness = Readiness()
        """What /readyz checks on HTTP: a server sets its upstream's check (`server.readiness.set(...)`)."""
        self.audit = AuditTrail(name, version)
        """One audit line per call, read and prompt; written once `configure_audit_log` names a destination."""
        # First in the SDK's chain: the audit sees what the client saw, and every handshake-era connection is
        # known before any handler runs.
        self._mcp_server.middleware[:0] = [self.audit.record, self.changes.track, _explain_invalid_params]
        self.read_only = read_only
        self.call_timeout_s: float | None = None
        """The longest one tools/call may take before its client gets an isError (None: no bound); the CLI sets it."""
        self.max_calls_per_client = 4
        """Tool calls one client (principal) may run at once; more wait in that client's own queue."""
        self.max_queued_calls_per_client = 32
        """Calls one client may have waiting; past it, a call fails at once instead of piling up."""
        self._client_slots: dict[str, _ClientSlots] = {}
        self.shared_state = SharedState(None)
        """Where state shared between hosts lives (`--state-url`); this process's memory by default."""
        self.flows = CrossWrites()
        """What each session read, and the confirmation of writes elsewhere (flows.py); the CLI sets what it allows."""
        dynamic = is_dynamic(enabled_toolsets)
        if dynamic and not any(d.name == "enable_toolset" for t in toolsets for d in t.tools):
            discovery = Toolset("discovery", "Find the other toolsets and switch them on")
            add_discovery(discovery, lambda: self)
            toolsets = [*toolsets, discovery]
            self.instructions = f"{self.instructions or ''}{DISCOVERY_HINT}".strip()
        self.toolsets = Toolsets(self, self.changes, toolsets, read_only=read_only, dynamic=dynamic)
        for toolset_name in parse_toolsets(enabled_toolsets, toolsets):
            self.toolsets.enable(toolset_name, announce=False)

    # --- what runs beside the requests: pollers, watchers, and what closes when the server stops --------------

    def run_in_background(self, job: Callable[[], Awaitable[None]]) -> None:
        """Run `job()` while the server serves (a poller, a file watcher); cancelled when it stops.

        A job that fails is logged and not restarted: its loop should catch what it expects to recover from.
        """
        self._background.append(job)

    def on_shutdown(self, callback: Callable[[], Awaitable[None] | None]) -> None:
        """Call `callback` when the server stops, after background jobs are cancelled (close pools, files)."""
        self._shutdown.append(callback)

    @asynccontextmanager
    async def _family_lifespan(self, server: Any) -> AsyncIterator[Any]:
        async with AsyncExitStack() as stack:
            stack.callback(forward_to_clients())  # the call's log lines reach its client too (client_log.py)
            result = None
            if self._own_lifespan is not None:
                result = await stack.enter_async_context(self._own_lifespan(server))
            # Plain asyncio tasks, not a task group: the lifespan is entered and left across different tasks
            # by some transports, which a cancel scope would not survive.
            jobs = [asyncio.create_task(_logged(job), name=getattr(job, "__name__", "job")) for job in self._background]
            try:
                yield result
            finally:
                for task in jobs:
                    task.cancel()
                await asyncio.gather(*jobs, return_exceptions=True)
                # Calls cut off as the server stopped: their cancels reach the database before its pools close
                # and before the process exits (a client's SIGKILL follows its SIGTERM by 2 s).
                await asyncio.to_thread(finish_cancelling, CANCEL_GRACE_S)
                for callback in reversed(self._shutdown):
                    try:
                        outcome = callback()
                        if inspect.isawaitable(outcome):
                            await outcome
                    except Exception:
                        logger.exception("shutdown step %r failed", callback)

    # --- what a transport without sessions can promise ---------------------------------------------------------

    def without_sessions(self, *, per_principal: bool = False) -> None:
        """Serve as stateless HTTP does: no request outlives its own response.

        Nothing can reach a client between its requests (the GET stream answers 405 and a 2026-07-28 listen
        stream needs the same long-lived response), so initialize and server/discover advertise no
        `listChanged` and no `resources.subscribe`, and those requests get -32601 instead of a success that
        leaves the client waiting.

        Toolset choices (`enable_toolset`): with `per_principal` (every caller has a credential, and every process
        serving it reads one store: `ServerSettings.keeps_choices_without_sessions`) a choice belongs to the
        caller's principal in both eras, and every later request of that credential sees it. Without, the tools
        that make such choices are left out: a choice one worker remembered would be missing on the next.
        """
        sdk = self._mcp_server
        for method in ("resources/subscribe", "resources/unsubscribe", "subscriptions/listen"):
            sdk._request_handlers.pop(method, None)
        sdk.notification_options.tools_changed = False
        sdk.notification_options.resources_changed = False
        sdk.notification_options.prompts_changed = False
        self.toolsets.without_sessions(per_principal=per_principal)
        if per_principal:
            # After the audit and the change hub, before any handler reads visibility rules.
            sdk.middleware.insert(sdk.middleware.index(self.changes.track) + 1, _principal_keys_state)
        elif self.toolsets.dynamic:
            logger.warning(
                "--toolsets dynamic without sessions: callers carry no credential (or several workers share no "
                "--state-url), so a toolset choice could not outlive its request; the default toolsets are served "
                "and the discovery tools left out. Set --auth-token-file (a token per client) to offer them."
            )
            self.instructions = (self.instructions or "").replace(DISCOVERY_HINT, "").strip() or None
        self.flows.sessions = False  # a principal's requests share one history (flows.py)

    def seal_request_state_with(self, key: bytes) -> None:
        """Seal the request state of 2026-07-28 multi-round-trip calls (a cross write's question, flows.py) with
        `key`, which every host shares, instead of this process's own: a gateway may send the answer to another
        host than the one that asked, which could not open the state and would answer -32602."""
        from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

        sdk = self._mcp_server
        boundary = RequestStateBoundary(RequestStateSecurity(keys=[key]), default_audience=sdk.name)
        sdk.middleware = [boundary if isinstance(m, RequestStateBoundary) else m for m in sdk.middleware]

    # --- handlers fastmcp lacks ------------------------------------------------------------------------------

    def _setup_handlers(self) -> None:
        super()._setup_handlers()
        sdk = self._mcp_server
        sdk.add_request_handler("resources/subscribe", SubscribeRequestParams, self._on_subscribe)
        sdk.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self.changes.on_unsubscribe)
        # 2026-07-28 clients receive change events on listen streams instead of the standalone channel.
        sdk.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, self.changes.listen_handler)

    async def _on_subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> mcp_types.EmptyResult:
        uri = str(params.uri)
        if await self.get_resource(uri) is None and await self.get_resource_template(uri) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Resource not found: {uri!r}", data={"uri": uri})
        return await self.changes.on_subscribe(ctx, params)

    # --- the error split -------------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        version: VersionSpec | None = None,
        run_middleware: bool = True,
    ) -> ToolResult:
        if not run_middleware:  # the inner call of fastmcp's middleware chain: translate once, outside it
            return await super().call_tool(name, arguments, version=version, run_middleware=False)
        async with self._client_slot(ToolError):
            return await self._call_within_limits(name, arguments, version)

    @asynccontextmanager
    async def _client_slot(self, refusal: Callable[[str], Exception]) -> AsyncIterator[None]:
        """One of the calling client's `max_calls_per_client` slots, waited for in that client's own queue.

        Fairness by construction: one client's 60 slow calls occupy its own slots and queue, never another
        client's, so others are answered at once. A slot is freed when its call is answered, and an abandoned
        call's work is cancelled (cancellation.py), so abandoned calls do not pile up behind the slots either.
        Resource reads and prompts take the same slots: they run domain code too (a file read, a query), and a
        client reading 60 slow resources would otherwise hold 60 worker threads. Past the queue, `refusal` is
        raised with the reason (ToolError, ResourceError, PromptError: what the client is told depends on it).
        """
        who = caller()
        slots = self._client_slots.get(who)
        if slots is None:
            slots = self._client_slots[who] = _ClientSlots(self.max_calls_per_client)
        if slots.free.locked() and slots.waiting >= self.max_queued_calls_per_client:
            self._failed("", "rate_limited")
            raise refusal(
                f"Too many calls from this client at once: {self.max_calls_per_client} running and "
                f"{slots.waiting} waiting (the server's per-client limit). Wait for some to finish, then retry."
            )
        slots.waiting += 1
        try:
            await slots.free.acquire()
        finally:
            slots.waiting -= 1
        slots.running += 1
        try:
            async with self._lease_across_hosts(who, refusal):
                yield
        finally:
            slots.running -= 1
            slots.free.release()
            if slots.running == 0 and slots.waiting == 0:
                self._client_slots.pop(who, None)  # an idle client costs nothing

    @asynccontextmanager
    async def _lease_across_hosts(self, who: str, refusal: Callable[[str], Exception]) -> AsyncIterator[None]:
        """With `--state-url`, one of the client's `max_calls_per_client` leases in Redis, so N hosts do not give
        it N times its share. Waited for (polled) while the client may queue, refused at once when it may not.

        A lease expires after the longest a call may take, so a host that died holding leases gives them back.
        Redis away: the per-process slot above is all there is (logged and counted by SharedState), never a
        refused or lost call."""
        state = self.shared_state
        if not state.shared:
            yield
            return
        ttl_s = (self.call_timeout_s or LEASE_WITHOUT_TIMEOUT_S) + LEASE_GRACE_S
        pool = hashlib.sha256(who.encode()).hexdigest()[:32]  # a JWT subject may be an address: not in Redis keys
        give_up_at = asyncio.get_running_loop().time() + ttl_s
        pause = LEASE_POLL_S
        while True:
            async with state.lease(f"calls:{pool}", self.max_calls_per_client, ttl_s=ttl_s) as held:
                if held is not False:  # True: held across hosts; None: nothing shared right now
                    yield
                    return
            if self.max_queued_calls_per_client == 0 or asyncio.get_running_loop().time() > give_up_at:
                self._failed("", "rate_limited")
                raise refusal(
                    f"Too many calls from this client at once: {self.max_calls_per_client} running across the "
                    "server's hosts (the per-client limit). Wait for some to finish, then retry."
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, LEASE_POLL_MAX_S)

    async def _call_within_limits(
        self, name: str, arguments: dict[str, Any] | None, version: VersionSpec | None
    ) -> ToolResult:
        definition = self.toolsets.definition(name)
        declared = definition if definition is not None and (definition.reads or definition.writes) else None
        if declared is not None and not await self._callable(name, version):
            declared = None  # fastmcp answers it as unknown below: no question for a call that cannot run
        context = self._flow_context() if declared is not None else None
        try:
            # Before the deadline starts: the user may take a while to answer a confirmation (flows.py bounds it).
            try:
                reads = await self.flows.guard(declared, arguments or {}, context) if declared is not None else []
            except AskFirst as ask:  # a 2026-07-28 call: this leg's answer is the question to its user
                return ask.result()  # type: ignore[no-any-return]
            result = await self._within_deadline(
                super().call_tool(name, arguments, version=version), lambda: self._call_timed_out(name)
            )
        except ToolFailure as failure:  # from the guard (a tool's own failures reach here as ToolError)
            self._failed(name, failure.category)
            raise ToolError(str(failure)) from failure
        except (NotFoundError, DisabledError) as exc:
            if await self.get_tool(name, version=version) is None:
                known = [t.name for t in await self.list_tools()]
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=failure_text(f"Unknown tool: {name!r}. {did_you_mean(name, known, noun='tool')}"),
                    data={"name": name},
                ) from exc
            raise ToolError(failure_text(str(exc))) from exc
        except ValidationError as exc:
            self._failed(name, "invalid_argument")
            raise ToolError(_argument_error(name, exc)) from exc
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ToolFailure):  # raised past the tool wrapper (a hand-built Tool): fastmcp masked it
                self._failed(name, cause.category)
                raise ToolError(str(cause)) from cause
            self._failed(name, getattr(exc, "category", None) or "internal", timed_out=isinstance(exc, _CallTimedOut))
            if cause is not None and not isinstance(cause, FastMCPError) and str(exc) == f"Error calling tool {name!r}":
                raise ToolError(
                    f"Tool {name!r} failed unexpectedly ({type(cause).__name__}); the details are in the server log."
                ) from cause
            message = failure_text(str(exc))
            if message == str(exc):
                raise
            raise ToolError(message) from exc
        await self.flows.record(reads, context)
        result, size = self._within_budget(name, result)
        annotate_call(self._toolset_of(name), "ok", size=size)
        return result

    async def _callable(self, name: str, version: VersionSpec | None) -> bool:
        """Whether this caller may call `name` now: enabled, visible to its session (a toolset it switched on),
        authorized. Asked before the cross-write guard, which fastmcp's own check would otherwise follow."""
        if call_context() is not None:
            return await self.get_tool(name, version=version) is not None
        from fastmcp.server.context import Context

        async with Context(fastmcp=self):  # current, so the session's visibility rules apply
            return await self.get_tool(name, version=version) is not None

    def _flow_context(self) -> Context | None:
        """fastmcp's context of the call being served, made here: fastmcp makes its own only inside `call_tool`,
        after the point where the cross-write guard must decide (and ask)."""
        existing = call_context()
        if existing is not None:
            return existing
        from fastmcp.server.context import Context

        made = Context(fastmcp=self)
        # Outside a request (a direct call_tool, as in-process code makes) there is no one to ask.
        return made if made.request_context is not None else None

    def _within_budget(self, name: str, result: ToolResult) -> tuple[ToolResult, int]:
        """The last check every answer passes: text and structured content within twice the tool's text budget
        (budget.py). The helpers' own tools already fit (conventions.answer_of); a tool built by hand, or one
        that returns a ToolResult itself, is cut here, so no tool of any server can send more. With the answer,
        its size as measured (the call's span carries it: measured once)."""
        definition = self.toolsets.definition(name)
        budget = definition.budget if definition else DEFAULT_BUDGET
        size = _result_bytes(result)
        if size <= 2 * budget:
            return result, size
        hint = definition.continue_hint if definition else "ask for less"
        content: list[mcp_types.ContentBlock] = []
        room = budget
        for block in result.content:
            if isinstance(block, mcp_types.TextContent):
                text = cut_text(block.text, max(room, 0), hint) if room > 0 else ""
                room -= json_size(text)
                content.append(block.model_copy(update={"text": text}))
            else:
                content.append(block)
        structured = result.structured_content
        if structured is not None:
            structured = fit_structure(structured, 2 * budget - (budget - room))
        logger.warning("tool %r answered over its budget and was cut (%d bytes)", name, size)
        cut = ToolResult(content=content, structured_content=structured, meta=result.meta)
        return cut, _result_bytes(cut)

    def _failed(self, name: str, category: str, *, timed_out: bool = False) -> None:
        """Why a call failed, for its audit line and its span (the span is current here, not in the audit)."""
        note_failure(category, timed_out=timed_out)
        outcome = "timeout" if timed_out else "refused" if category == "refused" else "tool_error"
        annotate_call(self._toolset_of(name), outcome, category=category)

    def _toolset_of(self, tool_name: str) -> str | None:
        for toolset in self.toolsets.available:
            if any(d.name == tool_name for d in toolset.tools):
                return toolset.name
        return None

    async def read_resource(
        self,
        uri: str,
        *,
        version: VersionSpec | None = None,
        run_middleware: bool = True,
    ) -> ResourceResult:
        """A URI that matches a template but names nothing is -32602 with the URI, like one that matches nothing
        (one code for one condition, SEP-2164); fastmcp would answer -32603, an internal error.

        A read that succeeded joins its session's history as a tool's reads do (flows.py), at the place its
        server declared for the URI (`flows.resources_read`)."""
        try:
            if not run_middleware:
                return await super().read_resource(uri, version=version, run_middleware=False)
            async with self._client_slot(ResourceError):
                reads = await self.flows.resource_places(uri)
                result = await self._within_deadline(
                    super().read_resource(uri, version=version, run_middleware=True),
                    self._too_slow(f"reading {uri!r}", ResourceError),
                )
                if reads:
                    await self.flows.record(reads, self._flow_context())
                return result
        except ResourceError as exc:
            # fastmcp masks what is not its own error type; a ToolFailure's message is meant for the client.
            failure = exc.__cause__
            if isinstance(failure, NotFound | InvalidArgument):
                raise MCPError(code=INVALID_PARAMS, message=failure_text(str(failure)), data={"uri": uri}) from failure
            if isinstance(failure, ToolFailure):
                data: dict[str, Any] = {"uri": uri, "category": failure.category}
                if isinstance(failure, RateLimited) and failure.retry_after is not None:
                    data["retry_after"] = failure.retry_after
                raise MCPError(code=RESOURCE_FAILED, message=failure_text(str(failure)), data=data) from failure
            raise

    async def render_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        version: VersionSpec | None = None,
        run_middleware: bool = True,
    ) -> PromptResult:
        """A prompt's `ToolFailure` (an argument it cannot use) reaches the client with its message, and a missing
        required argument is -32602 naming it, checked here: fastmcp would log the client's mistake as a
        WARNING with a traceback, which reads as an upstream failing."""
        if run_middleware:
            prompt = await self.get_prompt(name, version=version)
            if prompt is not None:
                given = arguments or {}
                missing = [a.name for a in prompt.arguments or () if a.required and a.name not in given]
                if missing:
                    needed = ", ".join(repr(m) for m in missing)
                    raise MCPError(
                        code=INVALID_PARAMS,
                        message=f"Prompt {name!r} needs the argument(s) {needed}; see prompts/list for each one.",
                        data={"name": name, "missing": missing},
                    )
        try:
            if not run_middleware:
                return await super().render_prompt(name, arguments, version=version, run_middleware=False)
            async with self._client_slot(PromptError):
                return await self._within_deadline(
                    super().render_prompt(name, arguments, version=version, run_middleware=True),
                    self._too_slow(f"prompt {name!r}", PromptError),
                )
        except PromptError as exc:
            if isinstance(exc.__cause__, ToolFailure):
                raise PromptError(str(exc.__cause__)) from exc.__cause__
            raise

    async def _within_deadline(self, call: Awaitable[_Done], timed_out: Callable[[], Awaitable[Exception]]) -> _Done:
        """The call's result, or `await timed_out()` raised once `call_timeout_s` has passed.

        Cancelling is not enough: fastmcp runs a sync tool in a worker thread and waits for the thread, and a
        thread blocked on an upstream that sends a byte now and then (no per-read timeout ends that) would
        hold the answer for as long as the upstream likes. So the call runs as its own task and is waited for
        only until the deadline; then it is cancelled, which stops an async tool at once, and a thread still
        running finishes on its own with nobody waiting for its result.
        """
        abandonment, token = watch_call()  # before the task: it and its worker thread copy this context
        progress = start_reporting()  # report_progress() from the tool reaches this call's client
        try:
            if self.call_timeout_s is None:
                try:
                    return await call
                except asyncio.CancelledError:  # the client cancelled, or the server is stopping
                    abandonment.abandon()
                    raise
            task = asyncio.ensure_future(call)
            try:
                return await asyncio.wait_for(asyncio.shield(task), self.call_timeout_s)
            except TimeoutError:
                abandonment.abandon()  # what the tool waits on is cancelled too (cancellation.py)
                task.add_done_callback(_forget)
                task.cancel()
                raise await timed_out() from None
            except asyncio.CancelledError:  # the client cancelled, or the server is stopping: stop the call too
                abandonment.abandon()
                task.cancel()
                raise
        finally:
            unwatch_call(token)
            stop_reporting(progress)

    async def _call_timed_out(self, name: str) -> Exception:
        tool = await self.get_tool(name)
        read_only = bool(tool and tool.annotations and tool.annotations.read_only_hint)
        after = (
            "Retry, or ask for less."
            if read_only
            else "It may still complete: check its effect before calling it again."
        )
        logger.warning("tool %r passed the %g s call timeout and was abandoned", name, self.call_timeout_s)
        return _CallTimedOut(
            f"Tool {name!r} did not finish within {self.call_timeout_s:g} s (the server's call timeout); "
            f"what it waits on is too slow right now. {after}"
        )

    def _too_slow(self, what: str, error: Callable[[str], Exception]) -> Callable[[], Awaitable[Exception]]:
        """The timeout answer for a resource read or a prompt (`what` names it), as `error`."""

        async def timed_out() -> Exception:
            logger.warning("%s passed the %g s call timeout and was abandoned", what, self.call_timeout_s)
            return error(
                f"{what[0].upper()}{what[1:]} did not finish within {self.call_timeout_s:g} s (the server's call "
                "timeout); what it waits on is too slow right now. Retry, or ask for less."
            )

        return timed_out

    # --- compact listings: fastmcp's own bookkeeping (tags, versions) is not for the model -------------------

    def _refuse_unissued_cursor(self, params: mcp_types.PaginatedRequestParams | None) -> None:
        """The spec: an invalid cursor SHOULD be -32602. Listing in one page, fastmcp issues no cursor and ignores
        any it is sent, answering the first page again: a client paging on a stale cursor then shows every entry
        twice. (An empty cursor is taken as none: clients that build params generically send one.)"""
        if params is not None and params.cursor and self._list_page_size is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message="Invalid cursor: this server lists everything in one page and issued no cursor; "
                "list again without one.",
            )

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        self._refuse_unissued_cursor(params)
        result = await super()._on_list_tools(ctx, params)
        result.tools = [_compact_tool(t) for t in result.tools]
        return result

    async def _on_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListResourcesResult:
        self._refuse_unissued_cursor(params)
        result = await super()._on_list_resources(ctx, params)
        result.resources = [_without_fastmcp_meta(r) for r in result.resources]
        return result

    async def _on_list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListResourceTemplatesResult:
        self._refuse_unissued_cursor(params)
        result = await super()._on_list_resource_templates(ctx, params)
        result.resource_templates = [_without_fastmcp_meta(t) for t in result.resource_templates]
        return result

    async def _on_list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListPromptsResult:
        self._refuse_unissued_cursor(params)
        result = await super()._on_list_prompts(ctx, params)
        result.prompts = [_without_fastmcp_meta(_without_text_schema_notes(p)) for p in result.prompts]
        return result


class _ClientSlots:
    def __init__(self, size: int) -> None:
        self.free = asyncio.Semaphore(size)
        self.waiting = 0
        self.running = 0


class _CallTimedOut(ToolError):
    """The whole-call deadline passed: an isError at once, its outcome `timeout` in the audit and the span."""

    category = "unavailable"


def _result_bytes(result: ToolResult) -> int:
    """Bytes of the answer's text and structured content as JSON on the wire (media is bounded by its tool)."""
    text = sum(json_size(block.text) for block in result.content if isinstance(block, mcp_types.TextContent))
    return text + (json_size(result.structured_content) if result.structured_content is not None else 0)


def _forget(task: asyncio.Future[Any]) -> None:
    """Take an abandoned call's outcome, so that asyncio does not log it as never retrieved."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("an abandoned call ended in %s", type(task.exception()).__name__)


async def _logged(job: Callable[[], Awaitable[None]]) -> None:
    try:
        await job()
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("background job %r stopped", job)


_ANSWERED_BEFORE_THE_HANDSHAKE = frozenset({"initialize", "ping"})
"""Methods the SDK serves before initialize: their -32602 is always bad params, never a missing handshake."""


async def _principal_keys_state(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """SDK server middleware of a stateless server: a handshake-era request's fastmcp state (its visibility rules,
    which hold its toolset choices) is keyed by its principal, as a 2026-07-28 request's already is.

    Stateless, the SDK gives every handshake-era request a connection of its own and fastmcp a fresh random
    session id, so a choice saved under it was gone with the answer. fastmcp reads the key it caches on the
    connection (`_fastmcp_state_prefix`); set first, it makes both eras of one credential share one key
    (`user:<digest of the principal>`, what `listening_scope` names). A request with no principal keeps its random
    one, and `enable_toolset` refuses it (toolsets.py)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        from fastmcp.server.sessions import current_principal

        if current_principal() is not None:
            connection = getattr(ctx.session, "_connection", None)
            if connection is not None:
                connection.state["_fastmcp_state_prefix"] = listening_scope()
    return await call_next(ctx)


async def _explain_invalid_params(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Give the SDK's bare "Invalid request parameters" (data "") a message a client developer can act on.

    The SDK answers two different mistakes with that one pinned error: a request before the handshake, and
    params that fail the method's schema. The code stays -32602; the message says which, and what to send.
    """
    try:
        return await call_next(ctx)
    except (MCPError, PydanticValidationError) as exc:
        if isinstance(exc, MCPError) and (
            exc.error.code != INVALID_PARAMS or exc.error.message != "Invalid request parameters"
        ):
            raise
        connection = ctx.session._connection
        if (
            ctx.method not in _ANSWERED_BEFORE_THE_HANDSHAKE
            and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
            and not connection.initialize_accepted
        ):
            message = (
                f"Not initialized: send initialize, then notifications/initialized, before {ctx.method!r} "
                "(or send every request with the 2026-07-28 _meta envelope)."
            )
        else:
            message = f"Invalid params for {ctx.method!r}" + _params_problems(ctx)
        raise MCPError(code=INVALID_PARAMS, message=failure_text(message)) from exc


def _params_problems(ctx: ServerRequestContext[Any, Any]) -> str:
    try:
        methods.validate_client_request(ctx.method, ctx.protocol_version, ctx.params)
    except PydanticValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc'] if p not in ('params',)) or 'params'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False, include_context=False)
        ]
        return ": " + "; ".join(problems[:5]) + "."
    except (KeyError, ValueError):
        pass
    return "."


def _compact_tool(wire_tool: mcp_types.Tool) -> mcp_types.Tool:
    annotations = wire_tool.annotations
    if annotations is not None and annotations.title == wire_tool.title:
        # The top-level title wins over annotations.title (spec, Tool): sending both says it twice.
        annotations = annotations.model_copy(update={"title": None})
    compacted = wire_tool.model_copy(
        update={
            "input_schema": compact_schema(wire_tool.input_schema),
            "output_schema": compact_schema(wire_tool.output_schema) if wire_tool.output_schema else None,
            "annotations": annotations,
        }
    )
    return _without_fastmcp_meta(compacted)


_TEXT_SCHEMA_NOTE = (
    'Provide a value matching the following JSON schema: {"type":"string"}. Encode non-string values as JSON.'
)
"""What fastmcp adds to a prompt argument's description unless its annotation is `str` itself; under
`from __future__ import annotations` it is the string 'str', and a text argument needs no such note."""


def _without_text_schema_notes(prompt: mcp_types.Prompt) -> mcp_types.Prompt:
    if not any(_TEXT_SCHEMA_NOTE in (a.description or "") for a in prompt.arguments or ()):
        return prompt
    arguments = [
        a.model_copy(update={"description": (a.description or "").replace(_TEXT_SCHEMA_NOTE, "").strip() or None})
        for a in prompt.arguments or ()
    ]
    return prompt.model_copy(update={"arguments": arguments})


def _without_fastmcp_meta(component: _Listed) -> _Listed:
    meta = component.meta
    if not meta or "fastmcp" not in meta:
        return component
    rest = {k: v for k, v in meta.items() if k != "fastmcp"}
    return component.model_copy(update={"meta": rest or None})


def _argument_error(tool_name: str, exc: ValidationError) -> str:
    """One line per bad field, without pydantic's URLs or echoed input values."""
    cause = exc.__cause__
    if not isinstance(cause, PydanticValidationError):
        return failure_text(str(exc))
    problems = []
    for error in cause.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return failure_text(
        f"Invalid arguments for {tool_name!r}: " + "; ".join(problems) + ". Fix them to match the tool's inputSchema."
    )
