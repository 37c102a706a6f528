"""The command-line track: every tool of a server is also a command, from the same `ToolDefinition`s.

    mcp-server-X [server options] tools                    list the tools, one line each
    mcp-server-X [server options] call TOOL [ARGS] [--json]  run one; `call TOOL --help` for its options
    mcp-server-X [server options] skill [--output DIR]       write the Agent Skill that teaches these commands

Server options come first, as with `git -C DIR log`: the same settings, environment and guards as the server
(read-only, toolsets, allow-lists, write gating, fencing of untrusted text), because the same domain code runs.
A tool's options come from its input schema: `--name-with-dashes VALUE`, `--flag/--no-flag` for booleans, a
repeated option for a list, JSON for an object; its required arguments may also be given in order, unnamed.

What a command prints is exactly the text the MCP result carries (`--json`: the structured content); it exits
0 on success, 1 when the tool fails (the isError message on stderr), 2 for a usage error. Nothing here imports
fastmcp or the MCP SDK: a call pays for the domain's imports only (a test checks `sys.modules`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import inspect
import json
import logging
import sys
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from mcp_server_core.conventions.errors import ToolFailure, Unavailable, did_you_mean, redact
from mcp_server_core.conventions.tools import Media, ToolDefinition, answer_of, collecting_notes
from mcp_server_core.protocol.cancellation import unwatch_call, watch_call
from mcp_server_core.protocol.toolsets import Toolset, is_dynamic, parse_toolsets
from mcp_server_core.tracks.arguments import (
    PAGING,
    _Argument,
    _arguments_of,
    _option,
    argument_kinds,
    argument_model,
    task_of,
    usage_line,
)

__all__ = [
    "COMMANDS",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "PAGING",
    "ToolCommands",
    "argument_kinds",
    "argument_model",
    "task_of",
    "usage_line",
]

COMMANDS = ("tools", "call", "skill")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

logger = logging.getLogger(__name__)

_DISCOVERY = frozenset({"list_toolsets", "enable_toolset"})
"""The MCP track's discovery pair (toolsets.add_discovery): named on the command track only to say why not."""


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


class ToolCommands:
    """The commands of one server, over the toolsets its settings enable."""

    def __init__(
        self,
        distribution: str,
        summary: str,
        toolsets: Sequence[Toolset],
        *,
        skill: str,
        notes: Sequence[str] = (),
        enabled: str | Sequence[str] | None,
        read_only: bool,
        call_timeout_s: float | None = None,
    ) -> None:
        self.distribution = distribution
        self.summary = summary
        self.skill = skill
        """One sentence: when an agent should use these commands (the skill's description)."""
        self.notes = list(notes)
        """What an agent must know before using them (safety, where settings come from)."""
        self.toolsets = list(toolsets)
        # `dynamic` saves MCP context by switching toolsets on later; a command costs no context: all are on.
        self.enabled = parse_toolsets("all" if is_dynamic(enabled) else enabled, self.toolsets)
        self.read_only = read_only
        self.call_timeout_s = call_timeout_s
        """The longest one command's tool may take (the server's --call-timeout-s); None: no bound."""

    # --- what is offered: what an MCP client of the same server would see, minus the session-only tools ---------

    def offered(self) -> Iterator[tuple[Toolset, ToolDefinition]]:
        for toolset in self.toolsets:
            if toolset.name in self.enabled:
                for definition in toolset.tools:
                    if (definition.read_only or not self.read_only) and not definition.needs_session:
                        yield toolset, definition

    def find(self, name: str) -> ToolDefinition:
        wanted = name.replace("-", "_")
        for _, definition in self.offered():
            if definition.name == wanted:
                return definition
        for toolset in self.toolsets:
            for definition in toolset.tools:
                if definition.name != wanted:
                    continue
                if not definition.read_only and self.read_only:
                    raise _UsageError(f"{wanted} writes, and this server is read-only (--read-only).")
                if definition.needs_session:
                    raise self._no_session(wanted)
                raise _UsageError(
                    f"{wanted} is in the toolset {toolset.name!r}, which is off: add --toolsets {toolset.name}."
                )
        if wanted in _DISCOVERY:
            raise self._no_session(wanted)
        known = [d.name for _, d in self.offered()]
        raise _UsageError(f"no tool {wanted!r}. {did_you_mean(wanted, known, noun='tool')}")

    def _no_session(self, wanted: str) -> _UsageError:
        return _UsageError(
            f"{wanted} switches toolsets on for an MCP session; a command has none and needs none: "
            f"`{self.distribution} tools` lists every command, and `--toolsets NAME,...` (or all) before `call` "
            "turns more on."
        )

    # --- the three commands --------------------------------------------------------------------------------------

    def main(self, argv: Sequence[str]) -> int:
        """Run `tools`, `call` or `skill` with the words after it; the exit status."""
        command, *rest = argv
        try:
            if command == "tools":
                return self._tools(rest)
            if command == "skill":
                return self._skill(rest)
            return self._call(rest)
        except _UsageError as exc:
            print(f"{self.distribution} {command}: error: {exc}", file=sys.stderr)
            return EXIT_USAGE

    def _tools(self, argv: Sequence[str]) -> int:
        parser = _Parser(prog=f"{self.distribution} tools", description="List the tools this server offers.")
        parser.parse_args(argv)
        print(self.listing())
        return EXIT_OK

    def listing(self) -> str:
        lines = []
        width = max((len(d.name) for _, d in self.offered()), default=0)
        for _, definition in self.offered():
            mark = "  " if definition.read_only else "w "
            lines.append(f"{mark}{definition.name:<{width}}  {task_of(definition.summary)}")
        off = [t.name for t in self.toolsets if t.name not in self.enabled]
        lines.append(f"w = writes. `{self.distribution} call TOOL --help` for one tool's options.")
        if off:
            lines.append(f"Off: {', '.join(off)} (--toolsets all).")
        return "\n".join(lines)

    def _skill(self, argv: Sequence[str]) -> int:
        from mcp_server_core.tracks.skills import skill_markdown, write_skill

        parser = _Parser(prog=f"{self.distribution} skill", description="Write the Agent Skill for these commands.")
        parser.add_argument("--output", metavar="DIR", help="write DIR/<name>/SKILL.md (default: print it)")
        args = parser.parse_args(argv)
        if args.output is None:
            print(skill_markdown(self), end="")
        else:
            print(write_skill(self, args.output))
        return EXIT_OK

    def _call(self, argv: Sequence[str]) -> int:
        if not argv or argv[0].startswith("-"):
            if argv and argv[0] in ("-h", "--help"):
                print(f"usage: {self.distribution} call TOOL [ARGS] [--json]\n\n{self.listing()}")
                return EXIT_OK
            raise _UsageError(f"name a tool: {self.distribution} tools lists them")
        definition = self.find(argv[0])
        model = argument_model(definition)
        arguments_of = _arguments_of(model)
        parser = self._tool_parser(definition, arguments_of)
        try:
            parsed = parser.parse_args(argv[1:])
        except SystemExit as exc:  # --help printed
            return int(exc.code or 0)
        as_json = parsed.json
        try:
            arguments = _validated(model, arguments_of, vars(parsed))
        except ValidationError as exc:
            problems = "; ".join(
                f"{_option('.'.join(str(p) for p in e['loc']))}: {e['msg']}"
                for e in exc.errors(include_url=False, include_input=False, include_context=False)
            )
            raise _UsageError(problems) from None
        return self._run(definition, arguments, as_json=as_json)

    # --- one tool as a command -----------------------------------------------------------------------------------

    def _tool_parser(self, definition: ToolDefinition, arguments: list[_Argument]) -> argparse.ArgumentParser:
        parser = _Parser(
            prog=f"{self.distribution} call {definition.name}",
            description=definition.description,
            epilog="Prints the tool's text (--json: its structured result). Exit 0 ok, 1 tool failure, 2 usage.",
        )
        for argument in arguments:
            name, help_text = argument.name, argument.help or None
            if argument.required and argument.kind != "flag":
                # Given in order without a name, or by name: `call read_file src/a.py` = `--path src/a.py`.
                parser.add_argument(
                    f"{name}__positional",
                    nargs="*" if argument.repeated else "?",
                    metavar=name.upper(),
                    help=help_text,
                )
            if argument.kind == "flag":
                parser.add_argument(_option(name), dest=name, action=argparse.BooleanOptionalAction, help=help_text)
            elif argument.repeated:
                parser.add_argument(_option(name), dest=name, action="append", metavar="VALUE", help=help_text)
            else:
                parser.add_argument(
                    _option(name),
                    dest=name,
                    metavar="JSON" if argument.kind == "json" else "VALUE",
                    choices=argument.choices,
                    help=help_text,
                )
        parser.add_argument("--json", action="store_true", help="print the structured result as JSON")
        return parser

    def _within_deadline(self, definition: ToolDefinition, arguments: dict[str, Any]) -> Any:
        """The tool's result, or a ToolFailure once `call_timeout_s` has passed, as on the MCP track: the call is
        abandoned (what it waits on is cancelled: a statement, a walk) and the command exits 1 at once."""
        abandonment, token = watch_call()
        try:
            if inspect.iscoroutinefunction(definition.fn):
                finished, result = asyncio.run(
                    _awaited_until(definition.fn(**arguments), self.call_timeout_s, abandonment)
                )
                if finished:
                    return result
            else:
                outcome: list[Any] = []
                # A daemon thread: a tool stuck past the deadline must not hold the command's exit.
                worker = threading.Thread(
                    target=contextvars.copy_context().run,
                    args=(_capture, outcome, definition.fn, arguments),
                    daemon=True,
                )
                worker.start()
                worker.join(self.call_timeout_s)
                if outcome:
                    kind, value = outcome[0]
                    if kind == "raised":
                        raise value
                    return value
            abandonment.abandon()  # what the tool waits on stops too: a statement, a walk (cancellation.py)
            after = "Retry, or ask for less." if definition.read_only else "Check its effect before running it again."
            raise Unavailable(
                f"{definition.name} did not finish within {self.call_timeout_s:g} s (--call-timeout-s). {after}"
            )
        finally:
            unwatch_call(token)

    def _run(self, definition: ToolDefinition, arguments: dict[str, Any], *, as_json: bool) -> int:
        try:
            with collecting_notes() as notes:
                result = self._within_deadline(definition, arguments)
        except ToolFailure as failure:
            print(str(failure), file=sys.stderr)
            return EXIT_FAILED
        except Exception as exc:
            logger.exception("tool %r failed unexpectedly", definition.name)
            print(
                redact(f"{definition.name} failed unexpectedly ({type(exc).__name__}); the details are in the log."),
                file=sys.stderr,
            )
            return EXIT_FAILED
        try:
            answer = answer_of(
                result, definition.budget, definition.continue_hint, notes, media_budget=definition.media_budget
            )
        except ToolFailure as failure:
            print(str(failure), file=sys.stderr)
            return EXIT_FAILED
        if as_json:
            print(_printable_json(_json_of(answer.text, answer.structured, answer.media)))
        else:
            print(answer.text)
        return EXIT_OK


def _validated(model: type[BaseModel], arguments: list[_Argument], parsed: dict[str, Any]) -> dict[str, Any]:
    """The parsed words as the tool's arguments, checked by its model (a ValidationError says what is wrong)."""
    given: dict[str, Any] = {}
    for argument in arguments:
        name = argument.name
        value = parsed.get(name)
        positional = parsed.get(f"{name}__positional")
        if positional not in (None, []):
            if value is not None:
                raise _UsageError(f"{name} given twice: by position and as {_option(name)}")
            value = positional
        if value is None:
            continue
        if argument.kind == "json":
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise _UsageError(f"{_option(name)} takes JSON: {exc.msg} at character {exc.pos}") from None
        elif argument.kind == "scalar-or-list" and isinstance(value, list) and len(value) == 1:
            value = value[0]
        given[name] = value
    validated = model.model_validate(given)
    # The validated values themselves (nested models included), as fastmcp hands them to the function.
    return {name: getattr(validated, name) for name in type(validated).model_fields}


async def _awaited_until(call: Any, seconds: float | None, abandonment: Any) -> tuple[bool, Any]:
    """(True, result), or (False, None) at the deadline, after abandoning the call first: a worker thread it
    waits on (anyio's, which a cancel waits for) then stops too instead of holding the command's exit."""
    task = asyncio.ensure_future(call)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if task in done:
        return True, task.result()
    abandonment.abandon()
    task.cancel()
    return False, None


def _capture(outcome: list[Any], fn: Any, arguments: dict[str, Any]) -> None:
    try:
        outcome.append(("returned", fn(**arguments)))
    except BaseException as exc:  # handed to the command's thread, which raises it there
        outcome.append(("raised", exc))


def _printable_json(value: Any) -> str:
    """`value` as JSON that shows no character a reader cannot see. Structured content may keep data as it came
    (the db server's cells), and JSON escapes a newline but not U+2028 (a line break to many terminals and
    readers), a bidi override or a zero-width mark: printed raw, a cell could start a line or reorder one. They
    are written as `\\uXXXX` escapes, so the JSON reads back as the same values; other text stays readable."""
    text = json.dumps(value, ensure_ascii=False)
    if text.isascii():
        return text
    return "".join(_json_escape(char) if _unseen(char) else char for char in text)


def _unseen(char: str) -> bool:
    return not char.isascii() and unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _json_of(text: str, structured: dict[str, Any] | None, media: Media | None) -> Any:
    if media is not None:
        return {"type": media.kind, "mimeType": media.mime_type, "data": media.data}
    return structured if structured is not None else {"text": text}
