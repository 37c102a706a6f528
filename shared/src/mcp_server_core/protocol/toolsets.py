"""Named groups of tools, switched on and off at run time; each switch sends tools/list_changed.

The user picks toolsets at start (`--toolsets repos,issues`, `all`, `default`, `dynamic`): that is the
server-wide baseline every client sees. `dynamic` starts with the discovery pair alone (`list_toolsets`,
`enable_toolset`, `add_discovery`), so the schema floor is two small tools until a task needs more. The server
may widen the baseline later for everybody (`enable`, e.g. a permission that arrived), or one session may
switch a toolset on for itself alone (`enable_for_session`, a discovery tool): then only that session's
tools/list changes and only it hears tools/list_changed, since one user's agent must not change another user's
tools (and context bill).

A 2026-07-28 client has no session: its request envelope carries the protocol version, its capabilities and a
self-reported `clientInfo` (display only, never identity), nothing that tells one client instance from another.
So in that era a choice belongs to the principal, the one identity the server can check: every client of one
credential sees it, on every host (`--state-url`), and hears tools/list_changed on its `subscriptions/listen`
streams; clients of other credentials see and hear nothing of it. Agents that must not share choices get a
credential each (a line each in `--auth-token-file`, or a JWT subject each).

Stateless HTTP (`--stateless`) keeps no session in either era, so there too a choice belongs to the principal:
every later request of that credential, whichever worker or host answers it, sees the toolset's tools, as long
as every process serving it reads the same store (one worker, or `--state-url`). Where callers carry no
credential, or several workers keep no common store, nothing could carry a choice to the next request: the
discovery tools are left out and the toolsets are those named at start.

A toolset's tools are registered with the server once, the first time it is switched on anywhere, tagged
`toolset:<name>`; fastmcp's visibility transforms then decide who sees them: a server-wide rule for the
baseline, fastmcp's per-session rules (`Context.enable_components`) for a session's own choices. Tools that
write are never registered on a read-only server: absent, not merely refused, so they cost no context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from pydantic import Field

from mcp_server_core.conventions.errors import did_you_mean
from mcp_server_core.conventions.tools import ToolDefinition, tool

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.context import Context
    from fastmcp.utilities.authorization import AuthCheck

    from mcp_server_core.protocol.notifications import ChangeHub

__all__ = ["DYNAMIC", "SessionsUnavailable", "Toolset", "Toolsets", "add_discovery", "parse_toolsets"]

DYNAMIC = "dynamic"
"""The `--toolsets` word for on-demand toolsets: only the discovery pair at start."""


class SessionsUnavailable(RuntimeError):
    """A per-session choice was asked for where the transport keeps no session to remember it in."""


class Toolset:
    """A named group of tools, on by default unless `default=False`."""

    def __init__(self, name: str, description: str, *, default: bool = True) -> None:
        self.name = name
        self.description = description
        self.default = default
        self.tools: list[ToolDefinition] = []

    def tool(self, **conventions: Any) -> Callable[[Callable[..., Any]], ToolDefinition]:
        """`conventions.tool(...)`, registering the tool in this toolset."""

        def decorate(fn: Callable[..., Any]) -> ToolDefinition:
            definition = tool(**conventions)(fn)
            self.tools.append(definition)
            return definition

        return decorate

    def __repr__(self) -> str:
        return f"Toolset({self.name!r}, tools={[t.name for t in self.tools]})"


def parse_toolsets(spec: str | Iterable[str] | None, available: Sequence[Toolset]) -> list[str]:
    """Names from a `--toolsets` value: comma-separated names, `all`, `default`; none means `default`.
    `dynamic` names no toolset itself (the server adds the discovery pair's, see `add_discovery`)."""
    if spec is None:
        words = ["default"]
    elif isinstance(spec, str):
        words = [w.strip() for w in spec.split(",") if w.strip()]
    else:
        words = list(spec)
    known = {t.name for t in available}
    chosen: list[str] = []
    for word in words or ["default"]:
        if word == DYNAMIC:
            names = [t.name for t in available if any(d.name == "enable_toolset" for d in t.tools)]
        elif word == "all":
            names = [t.name for t in available]
        elif word == "default":
            names = [t.name for t in available if t.default]
        elif word in known:
            names = [word]
        else:
            raise ValueError(
                f"unknown toolset {word!r}. {did_you_mean(word, [*known, 'all', 'default', DYNAMIC], noun='toolset')}"
            )
        chosen.extend(n for n in names if n not in chosen)
    return chosen


class Toolsets:
    """The toolsets of one server: the baseline every client sees, and what each session added for itself."""

    def __init__(
        self,
        server: FastMCP,
        changes: ChangeHub,
        available: Sequence[Toolset],
        *,
        read_only: bool,
        dynamic: bool = False,
    ) -> None:
        self._server = server
        self._changes = changes
        self.dynamic = dynamic
        self._available = {t.name: t for t in available}
        self._registered: dict[str, list[str]] = {}  # toolset -> the names of its tools on the server
        self._baseline: list[str] = []
        self.read_only = read_only
        self.sessions = True
        """False once the server serves without sessions (stateless HTTP)."""
        self.choices_kept = True
        """Whether a choice made in one request reaches the caller's later ones (its session, or its principal on a
        stateless server); False leaves out the tools that make such choices."""

    @property
    def available(self) -> list[Toolset]:
        return list(self._available.values())

    @property
    def enabled(self) -> list[str]:
        """The server-wide baseline: what every client sees."""
        return list(self._baseline)

    def tool_names(self, name: str) -> list[str]:
        """The tools `name` holds for the caller being served: its writes left out when the server is read-only,
        or when the caller's own upstream token cannot write (they neither see nor can call those: `_register`
        puts the same check on them), so a listing names only tools the caller could use."""
        from mcp_server_core.auth.upstream import caller_may_write  # imports fastmcp: serving only

        writes = caller_may_write()
        return [d.name for d in self._get(name).tools if self._offered(d) and (writes or d.read_only)]

    def without_sessions(self, *, per_principal: bool = False) -> None:
        """Serve without sessions (stateless HTTP). With `per_principal` each caller's choices are kept under its
        principal and the discovery tools stay; without, they are left out, registered or not."""
        self.sessions = False
        if per_principal:
            return
        self.choices_kept = False
        for name, registered in self._registered.items():
            for definition in self._available[name].tools:
                if definition.needs_session and definition.name in registered:
                    self._server.local_provider.remove_tool(definition.name)
                    registered.remove(definition.name)
        if self.dynamic:  # nothing could switch a toolset on later: serve the default ones from the start
            for toolset in self._available.values():
                if toolset.default:
                    self.enable(toolset.name, announce=False)

    def definitions(self) -> list[ToolDefinition]:
        """Every tool of every toolset this server could offer, on or off."""
        return [d for t in self._available.values() for d in t.tools if self._offered(d)]

    def definition(self, name: str) -> ToolDefinition | None:
        """The tool called `name` among `definitions()`, or None (a tool built by hand, a fixture's)."""
        return next((d for d in self.definitions() if d.name == name), None)

    def enable(self, name: str, *, announce: bool = True) -> bool:
        """Switch a toolset on for every client; False if it already was. Clients hear tools/list_changed,
        unless `announce` is False (the server is being built: nobody holds a list yet)."""
        self._get(name)
        if name in self._baseline:
            return False
        self._register(name)
        self._server.enable(tags={_tag(name)}, components={"tool"})
        self._baseline.append(name)
        if announce:
            self._changes.tools_changed()
        return True

    def disable(self, name: str) -> bool:
        """Switch a toolset off for every client; False if it already was. Clients hear tools/list_changed."""
        self._get(name)
        if name not in self._baseline:
            return False
        self._server.disable(tags={_tag(name)}, components={"tool"})
        self._baseline.remove(name)
        self._changes.tools_changed()
        return True

    async def enabled_for(self, ctx: Context) -> list[str]:
        """The toolsets the calling session sees: the baseline and what it switched on for itself."""
        own = await self._session_choices(ctx)
        return [name for name in self._available if name in self._baseline or name in own]

    async def enable_for_session(self, name: str, ctx: Context) -> bool:
        """Switch a toolset on for the calling session only; False if it already sees it.

        Only that session's tools/list changes, and only it hears tools/list_changed (fastmcp sends it).
        `SessionsUnavailable` where nothing identifies the session from one request to the next.
        """
        self._get(name)
        if not self.sessions and not _has_principal():
            # Stateless, the choice would be keyed by this request alone (a handshake-era client's per-request id)
            # and forgotten with its answer, or every anonymous caller's at once: neither is this caller's own.
            raise SessionsUnavailable(
                "This server keeps no sessions and this request carries no credential, so a toolset switched on now "
                "could not be this client's alone."
            )
        if name in await self.enabled_for(ctx):
            return False
        self._register(name)
        try:
            await ctx.enable_components(tags={_tag(name)}, components={"tool"})
        except RuntimeError as exc:  # fastmcp: an anonymous 2026-07-28 HTTP request has no scope to keep rules in
            raise SessionsUnavailable(str(exc)) from None
        if ctx._is_modern_protocol():
            # No session in this era: the choice belongs to the principal (fastmcp keeps it under its scope key, in
            # Redis with --state-url), and that principal's subscriptions/listen streams, on every host, hear it.
            # fastmcp's own notification went to this request's connection, which ends with the answer.
            await self._changes.tools_changed_for(ctx._session_scope_key() or "process")
        return True

    async def _session_choices(self, ctx: Context) -> set[str]:
        tags: set[str] = set()
        for rule in await ctx._get_visibility_rules():
            if rule.get("enabled"):
                tags.update(rule.get("tags") or ())
        return {tag.removeprefix("toolset:") for tag in tags if tag.startswith("toolset:")}

    def register_all(self) -> None:
        """Register every toolset's tools now, hidden until a rule shows them: with hosts sharing choices
        (`--state-url`), a principal's rule written on one host must find the tools on every other."""
        for name in self._available:
            self._register(name)

    def _register(self, name: str) -> None:
        """Add the toolset's tools to the server once, hidden until a rule shows them to someone."""
        if name in self._registered:
            return
        self._server.disable(tags={_tag(name)}, components={"tool"})
        names = []
        for definition in self._available[name].tools:
            if not self._offered(definition):
                continue
            built = definition.build()
            built.tags = {*built.tags, _tag(name)}
            if not definition.read_only:
                from mcp_server_core.auth.upstream import upstream_allows_writes  # imports fastmcp: serving only

                # A caller whose own upstream token cannot write neither sees nor calls it (per caller, at once).
                built.auth = [*_checks(built.auth), upstream_allows_writes]
            self._server.add_tool(built)
            names.append(definition.name)
        self._registered[name] = names

    def _offered(self, definition: ToolDefinition) -> bool:
        return (definition.read_only or not self.read_only) and (self.choices_kept or not definition.needs_session)

    def _get(self, name: str) -> Toolset:
        try:
            return self._available[name]
        except KeyError:
            raise ValueError(
                f"unknown toolset {name!r}. {did_you_mean(name, self._available, noun='toolset')}"
            ) from None


def _has_principal() -> bool:
    from fastmcp.server.sessions import current_principal  # imports fastmcp: serving only

    return current_principal() is not None


def _checks(auth: AuthCheck | list[AuthCheck] | None) -> list[AuthCheck]:
    return [] if auth is None else list(auth) if isinstance(auth, list) else [auth]


def _tag(name: str) -> str:
    return f"toolset:{name}"


def is_dynamic(spec: str | Iterable[str] | None) -> bool:
    words = spec.split(",") if isinstance(spec, str) else list(spec or ())
    return DYNAMIC in (w.strip() for w in words)


class _WithToolsets(Protocol):
    """What the discovery pair needs of its server: only its toolsets (so this module needs no server class)."""

    toolsets: Toolsets


def add_discovery(toolset: Toolset, server: Callable[[], _WithToolsets]) -> None:
    """Add the discovery pair to `toolset`: `list_toolsets` and `enable_toolset`, which switches a toolset on for
    the calling session alone (tools/list_changed tells it). `server` gives the server once it is built."""
    from mcp_server_core.conventions.errors import InvalidArgument, Refused
    from mcp_server_core.conventions.tools import call_context

    # The pair changes what one session (or, stateless, one principal) sees: where nothing would carry the choice
    # to the caller's next request (`Toolsets.without_sessions`) it is left out, so no worker half-applies a choice
    # another worker never heard of.
    @toolset.tool(title="List toolsets", read_only=True, open_world=False, needs_session=True)
    async def list_toolsets() -> str:
        """Use to see which groups of tools exist, which are on, and what each holds."""
        target = server()
        ctx = call_context()
        enabled = set(await target.toolsets.enabled_for(ctx) if ctx else target.toolsets.enabled)
        return "\n".join(
            f"{t.name} ({'on' if t.name in enabled else 'off'}): {t.description}. Tools: "
            + _names(target.toolsets.tool_names(t.name))
            for t in target.toolsets.available
        )

    @toolset.tool(title="Enable toolset", read_only=True, open_world=False, needs_session=True)
    async def enable_toolset(name: Annotated[str, Field(description="from list_toolsets")]) -> str:
        """Use when a task needs tools that are off (list_toolsets names them); they appear at once."""
        target = server()
        ctx = call_context()
        try:
            if ctx is None:
                raise SessionsUnavailable("not an MCP call")
            changed = await target.toolsets.enable_for_session(name, ctx)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        except SessionsUnavailable as exc:
            if target.toolsets.sessions:
                raise Refused(
                    "This connection has no session to remember a toolset in (an unauthenticated 2026-07-28 HTTP "
                    "client): the tools are the ones the server started with.",
                    hint="Ask the operator to start the server with --toolsets including it, or connect with a token.",
                ) from None
            raise Refused(
                f"{exc} The tools are the ones the server started with.",
                hint="Ask the operator to set --auth-token-file (a token per client) so each client has its own "
                "identity, or to start the server with --toolsets including it.",
            ) from None
        names = _names(target.toolsets.tool_names(name))
        # For this session only (a 2026-07-28 client, or any on a stateless server: for its credential), so other
        # users keep the tools they had.
        answer = f"Toolset {name} {'is now' if changed else 'was already'} on: {names}."
        if not target.toolsets.sessions:
            # A stateless server announces nothing between requests (it advertises no listChanged).
            answer += " They are in tools/list from your next request on."
        return answer


def _names(tools: list[str]) -> str:
    # Every tool of a toolset may write, and this caller's token may not: say so rather than list nothing.
    return ", ".join(tools) or "none this caller can use"
