"""Tool schema conventions: names, descriptions, annotations, typed results, pagination, output budgets.

A tool is a typed Python function decorated with `tool(...)`. The decorator checks the family's conventions
when the module is imported (so a fork that breaks one fails at once, not in review) and wraps the function
so that a `Rendered` result reaches the wire as `structuredContent` plus a compact text rendering cut to the
tool's byte budget: the same JSON is never sent twice.

Nothing here imports fastmcp or the MCP SDK until a tool is built for a server: the command-line track
(commands.py) runs the same definitions without paying for either. So a tool returns `Rendered`, `str` or
`Media`, raises the helpers' `ToolFailure`s, and asks `call_context()` for the MCP call it serves, if any.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from mcp_server_core.conventions.budget import cut_text, fit_structure, json_size
from mcp_server_core.conventions.errors import InvalidArgument, ToolFailure
from mcp_server_core.conventions.places import PlaceOf

if TYPE_CHECKING:
    import mcp_types
    from fastmcp import Context
    from fastmcp.tools import Tool

__all__ = [
    "DEFAULT_BUDGET",
    "MAX_MESSAGE_BYTES",
    "Answer",
    "Cursor",
    "Limit",
    "Media",
    "Rendered",
    "ToolDefinition",
    "answer_of",
    "call_context",
    "collecting_notes",
    "compact_schema",
    "cut_to_budget",
    "decode_cursor",
    "encode_cursor",
    "note_at_end",
    "note_in_answer",
    "take_within_budget",
    "tool",
    "unadvertised",
]

DEFAULT_BUDGET = 16_000
"""Bytes of text a tool result may carry unless the tool says otherwise: about 4,000 tokens. The whole answer,
text and structured content together, is at most twice a tool's text budget (budget.py)."""

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""The largest request either transport reads (stdio's line, HTTP's default body); here, without the SDK's
imports, so a tool's own input bound can be set under it on the command-line track too."""

_TOOL_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_MAX_FIRST_SENTENCE = 200


class Rendered(BaseModel):
    """A typed tool result: its fields become `structuredContent`, `render()` the compact text beside it."""

    model_config = ConfigDict(extra="forbid")

    def render(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} must say how it renders as compact text")


@dataclass(frozen=True)
class Media:
    """An image or audio file as a tool's whole result: a media block on the wire, described on a command line."""

    data: str
    """base64"""
    mime_type: str

    @property
    def kind(self) -> str:
        return "audio" if self.mime_type.startswith("audio/") else "image"


@dataclass(frozen=True)
class Answer:
    """What a call answers, the same on both tracks: its text cut to the budget, its structure, or its media."""

    text: str
    structured: dict[str, Any] | None = None
    media: Media | None = None


@dataclass
class AnswerNotes:
    """What a call's answer says besides its rendering: lines it opens with, and lines it closes with."""

    opening: list[str] = field(default_factory=list)
    closing: list[str] = field(default_factory=list)


_notes: ContextVar[AnswerNotes | None] = ContextVar("mcp_server_core_answer_notes", default=None)


def note_in_answer(note: str) -> None:
    """A line the current call's answer opens with, once however often it is noted: how the answer was reached
    when the model should know (a renamed repository followed). A no-op outside a call."""
    notes = _notes.get()
    if notes is not None and note not in notes.opening:
        notes.opening.append(note)


def note_at_end(note: str) -> None:
    """A line the current call's answer closes with, kept through any cut to the budget: the tool's own word on
    how to continue ("continue with offset=401"). A no-op outside a call."""
    notes = _notes.get()
    if notes is not None and note not in notes.closing:
        notes.closing.append(note)


@contextmanager
def collecting_notes() -> Iterator[AnswerNotes]:
    """For the two tracks: the notes a tool's function makes while it runs (its worker threads included)."""
    notes = AnswerNotes()
    token = _notes.set(notes)
    try:
        yield notes
    finally:
        _notes.reset(token)


def answer_of(
    result: Rendered | str | Media,
    budget: int,
    continue_hint: str,
    notes: AnswerNotes | None = None,
    *,
    media_budget: int = 0,
) -> Answer:
    """The answer a tool's result makes, within its one budget (budget.py): the opening notes, the rendering and
    the closing notes as text of at most `budget` bytes; the fields as structured content within what is left of
    twice that; media of at most `media_budget` bytes of base64."""
    notes = notes or AnswerNotes()
    if isinstance(result, Media):
        if len(result.data) > media_budget:
            raise ToolFailure(
                f"The {result.kind} is {len(result.data) * 3 // 4:,} bytes, over the {media_budget * 3 // 4:,} "
                "bytes this tool may send.",
                hint="Read a smaller file, or read it as text with a range.",
            )
        return Answer(f"[{result.kind} {result.mime_type}, {len(result.data) * 3 // 4:,} bytes]", media=result)
    text = result.render() if isinstance(result, Rendered) else result
    if notes.opening:
        text = "\n".join(notes.opening) + "\n" + text
    text = cut_text(text, budget, continue_hint, opening=notes.opening, closing="\n".join(notes.closing))
    if not isinstance(result, Rendered):
        return Answer(text)
    # None fields are left out; compact_schema advertises them as optional, not nullable.
    structured = result.model_dump(mode="json", exclude_none=True)
    return Answer(text, fit_structure(structured, 2 * budget - json_size(text)))


def call_context() -> Context | None:
    """fastmcp's context of the MCP call being served, for the rare tool that needs its session (the client's
    roots, a per-session toolset); None on the command-line track or outside a call.

    Looked up through `sys.modules`, so that a command-line call never imports fastmcp to learn it has none.
    """
    dependencies = sys.modules.get("fastmcp.server.dependencies")
    if dependencies is None:
        return None
    try:
        context: Context = dependencies.get_context()
    except RuntimeError:
        return None
    return context


def cut_to_budget(text: str, max_bytes: int, how_to_continue: str) -> str:
    """The text, or its head cut at the last line break within `max_bytes` (as JSON on the wire), saying so and
    how to read on."""
    return cut_text(text, max_bytes, how_to_continue)


def take_within_budget(items: Sequence[Any], size_of: Callable[[Any], int], max_bytes: int, *, spent: int = 0) -> int:
    """How many leading items fit in `max_bytes`, of which `spent` are already used (by earlier pages of the
    same answer). At least one when nothing is spent yet, so a page always makes progress."""
    used = spent
    for index, item in enumerate(items):
        used += size_of(item)
        if used > max_bytes:
            return index if spent else max(index, 1)
    return len(items)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same contract in fewer bytes: what tools/list sends, since every byte is paid for in every
    conversation. What goes is what a model infers or never needs; the server still validates every argument
    against the tool's full signature, so nothing dropped here loosens what a call may do.

    - an optional field that defaults to null is advertised as its plain type (not required, no default);
    - `additionalProperties: false` goes: the model writes only the properties it is shown, and an unknown
      argument still fails at the server with an isError naming it (the contract suite proves both);
    - `additionalProperties: true` on an object is JSON Schema's default, so it goes;
    - so does `items: {}` (any item), which some clients also warn about as a schema with no keyword;
    - an optional flag's `default: false` goes: an absent flag is off, which no model needs told.

    A schema that names its dialect (`$schema`) was written by hand, not made from a signature: it is sent as
    written, every keyword kept (SEP-1613; the conformance suite checks it).
    """
    if "$schema" in schema:
        return schema

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: walk(value) for key, value in node.items()}
        variants = node.get("anyOf")
        if "default" in node and node["default"] is None and isinstance(variants, list):
            kept = [v for v in variants if v != {"type": "null"}]
            if len(kept) == 1 and len(variants) == 2:
                node = {**{k: v for k, v in node.items() if k not in ("anyOf", "default")}, **kept[0]}
        if node.get("type") == "object" and isinstance(node.get("additionalProperties"), bool):
            del node["additionalProperties"]
        if node.get("type") == "boolean" and node.get("default") is False:
            del node["default"]
        if node.get("type") == "array" and node.get("items") == {}:
            del node["items"]
        return node

    compacted: dict[str, Any] = walk(schema)
    return compacted


# --- pagination: `limit` and an opaque `cursor` in, `next_cursor` out -------------------------------------

_MAX_CURSOR = 16_384
"""A cursor may carry where a page stopped, and that can be a path: a file near PATH_MAX (4,096 bytes) makes a
cursor of over 5,000 characters, which a bound of 4,096 refused, so a search could not page past such a file."""


def unadvertised(*keywords: str) -> Callable[[dict[str, Any]], None]:
    """A `json_schema_extra` that leaves `keywords` out of the advertised schema (and out of an optional's
    branches) while pydantic still enforces them on every call: a bound for the server, not the model.

        channel: Annotated[str, Field(max_length=200, json_schema_extra=unadvertised("maxLength"))]

    For bounds no model comes near or infers anyway (a 200-character channel name, a limit of at least 1); one
    that shapes what a model should write (an enum, a maximum it might exceed) stays in the schema.
    """

    def drop(schema: dict[str, Any]) -> None:
        for node in [schema, *schema.get("anyOf", [])]:
            for keyword in keywords:
                node.pop(keyword, None)

    return drop


# Both are advertised bare (`"cursor": {"type": "string"}`, a `limit` with its default and maximum): every
# paged answer ends with `next_cursor=…`, so no tool needs the convention explained again, and their floors
# (a limit of at least 1, a cursor no longer than any this server issues) are checked, not shown.
Cursor = Annotated[str | None, Field(max_length=_MAX_CURSOR, json_schema_extra=unadvertised("maxLength"))]

Limit = Annotated[int, Field(ge=1, json_schema_extra=unadvertised("minimum"))]
"""The family's `limit`: a tool narrows it with its own maximum, `Annotated[Limit, Field(le=500)] = 50`."""


def _scope_tag(scope: str) -> str:
    return hashlib.blake2s(scope.encode(), digest_size=6).hexdigest()


def encode_cursor(position: dict[str, Any], *, scope: str = "") -> str:
    """An opaque cursor for `position`, bound to `scope` (the query it pages) so it cannot page another."""
    payload = json.dumps({"p": position, "s": _scope_tag(scope)}, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *, scope: str = "") -> dict[str, Any]:
    """The position a cursor from `encode_cursor` holds; an `InvalidArgument` for any other string."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw)
        position = payload["p"]
        tag = payload["s"]
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise InvalidArgument(
            "The cursor is not one this server issued.",
            hint="Pass next_cursor from the previous result unchanged, or omit cursor to start over.",
        ) from None
    if tag != _scope_tag(scope) or not isinstance(position, dict):
        raise InvalidArgument(
            "The cursor belongs to a different query.",
            hint="Repeat the same arguments with it, or omit cursor to start over.",
        )
    return position


# --- the tool decorator ----------------------------------------------------------------------------------

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolDefinition:
    """A checked tool, ready to become a fastmcp `Tool` on whichever server enables its toolset."""

    fn: Callable[..., Any]
    name: str
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    budget: int
    continue_hint: str
    media_budget: int = 0
    """Bytes of base64 a media answer may carry (an image or audio file as the whole answer); 0: none."""
    meta: dict[str, Any] = field(default_factory=dict)
    needs_session: bool = False
    """The tool changes what its own session sees (a discovery tool): absent where the transport keeps no
    session (stateless HTTP), since its effect could not outlive the request."""
    reads: PlaceOf | None = None
    """Where a call's content comes from (a repository, a channel, a folder): its session remembers it as read
    (protocol/flows.py)."""
    writes: PlaceOf | None = None
    """Where a call's write lands: a write anywhere but the places its session read asks the user first."""

    @property
    def description(self) -> str:
        return inspect.getdoc(self.fn) or ""

    @property
    def summary(self) -> str:
        """The description's first sentence (when to use the tool): what a one-line listing shows."""
        return first_sentence(self.description)

    @property
    def annotations(self) -> mcp_types.ToolAnnotations:
        import mcp_types

        return mcp_types.ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=self.open_world,
        )

    def build(self) -> Tool:
        from fastmcp.tools import Tool

        # Only a typed result has a structure to describe: text and media answers have no outputSchema.
        returns = inspect.signature(self.fn, eval_str=True).return_annotation
        structured = inspect.isclass(returns) and issubclass(returns, Rendered)
        return Tool.from_function(
            _wrap_result(self.fn, self.budget, self.continue_hint, self.media_budget),
            name=self.name,
            title=self.title,
            annotations=self.annotations,
            **({} if structured else {"output_schema": None}),
        )


def tool(
    *,
    title: str,
    read_only: bool,
    open_world: bool,
    destructive: bool = False,
    idempotent: bool | None = None,
    name: str | None = None,
    budget: int = DEFAULT_BUDGET,
    continue_hint: str = "narrow the request or page with cursor to see the rest",
    needs_session: bool = False,
    media_budget: int = 0,
    reads: PlaceOf | None = None,
    writes: PlaceOf | None = None,
) -> Callable[[Callable[..., Any]], ToolDefinition]:
    """Declare a tool with all four annotations; the function's docstring is its description.

    `read_only` and `open_world` have no default because both are claims the author must make. `idempotent`
    defaults to `read_only` (reads are idempotent, writes are not unless said so); `destructive` only
    applies to tools that write. `reads` and `writes` name the places a call reads and writes, from its
    arguments (conventions/places.py): what cross-write confirmation compares.
    """
    if read_only and destructive:
        raise ValueError("a read-only tool cannot be destructive")
    if read_only and writes is not None:
        raise ValueError("a read-only tool writes nowhere")

    def decorate(fn: Callable[..., Any]) -> ToolDefinition:
        tool_name = name or fn.__name__
        _check_conventions(tool_name, title, fn)
        return ToolDefinition(
            fn,
            tool_name,
            title,
            read_only=read_only,
            destructive=destructive,
            idempotent=read_only if idempotent is None else idempotent,
            open_world=open_world,
            budget=budget,
            continue_hint=continue_hint,
            needs_session=needs_session,
            media_budget=media_budget,
            reads=reads,
            writes=writes,
        )

    return decorate


# A sentence ends at . ! or ? before white space, but not at the abbreviations a description uses mid-sentence
# ("e.g. *.py"): the Skill and the `tools` listing show only the first sentence, and must not cut it short.
_SENTENCE_END = re.compile(r"(?<![\s(]e\.g\.)(?<![\s(]i\.e\.)(?<!\svs\.)(?<=[.!?])\s")


def first_sentence(text: str) -> str:
    return _SENTENCE_END.split(text.strip(), maxsplit=1)[0]


def _check_conventions(name: str, title: str, fn: Callable[..., Any]) -> None:
    if not _TOOL_NAME.match(name):
        raise ValueError(f"tool name {name!r} must be snake_case verb_noun, e.g. 'read_file'")
    if not title.strip():
        raise ValueError(f"tool {name!r} needs a title")
    doc = inspect.getdoc(fn)
    if not doc:
        raise ValueError(f"tool {name!r} needs a docstring whose first sentence says when to use it")
    if len(first_sentence(doc)) > _MAX_FIRST_SENTENCE:
        raise ValueError(f"tool {name!r}: the first sentence of its description is over {_MAX_FIRST_SENTENCE} chars")


def _wrap_result(fn: F, budget: int, continue_hint: str, media_budget: int) -> F:
    """Wrap fn for fastmcp: its answer becomes a `ToolResult`, its `ToolFailure` fastmcp's `ToolError` (which
    fastmcp shows the client unmasked); fastmcp still reads fn's own signature."""
    import mcp_types
    from fastmcp.exceptions import ToolError
    from fastmcp.tools.base import ToolResult

    def convert(result: Any, notes: AnswerNotes) -> Any:
        if not isinstance(result, Rendered | str | Media):
            return result  # already a ToolResult: a conformance fixture's hand-made content (server.py bounds it)
        answer = answer_of(result, budget, continue_hint, notes, media_budget=media_budget)
        if answer.media is not None:
            media = answer.media
            block: mcp_types.ContentBlock
            if media.kind == "audio":
                block = mcp_types.AudioContent(type="audio", data=media.data, mime_type=media.mime_type)
            else:
                block = mcp_types.ImageContent(type="image", data=media.data, mime_type=media.mime_type)
            return ToolResult(content=[block])
        if answer.structured is None:
            return answer.text
        return ToolResult(
            content=[mcp_types.TextContent(type="text", text=answer.text)], structured_content=answer.structured
        )

    def on_wire(failure: ToolFailure) -> ToolError:
        # At the failure's own log level (fastmcp logs any other exception as an error with its traceback);
        # the server reads the category from the failure itself, this error's cause.
        return ToolError(str(failure), log_level=failure.log_level)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                with collecting_notes() as notes:
                    return convert(await fn(*args, **kwargs), notes)
            except ToolFailure as failure:
                raise on_wire(failure) from failure

        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            with collecting_notes() as notes:
                return convert(fn(*args, **kwargs), notes)
        except ToolFailure as failure:
            raise on_wire(failure) from failure

    return run  # type: ignore[return-value]
