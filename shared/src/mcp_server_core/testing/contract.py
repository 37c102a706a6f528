"""The contract every server of the family passes; a fork subclasses it in its own tests.

    class TestContract(ContractSuite):
        budget = 3_000
        @pytest.fixture
        def server(self, tmp_path): return build_server(...)
        def failing_calls(self): return [("read_note", {"name": "missing"})]
        def state(self, server): return sorted(...)      # what a failed call must leave unchanged
        def stdio_command(self, tmp_path): return [...]  # argv that serves the same over stdio

Each check runs through the real protocol: the in-memory client for both protocol eras, and a subprocess
over stdio for the wire.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import re
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from mcp_server_core.conventions.errors import redact
from mcp_server_core.conventions.tools import DEFAULT_BUDGET
from mcp_server_core.protocol.server import ReferenceServer
from mcp_server_core.testing.hostile import assert_within_budget
from mcp_server_core.testing.wire import StdioWire

__all__ = ["ContractSuite", "assert_no_secret", "tools_list_bytes"]

ERAS = ("legacy", "2026-07-28")
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_SNAKE = re.compile(r"(?<![\w./:-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(/-])")
_TRACEBACK_MARKERS = ("Traceback (most recent call last)", 'File "/', '.py", line ')


async def tools_list_bytes(server: ReferenceServer) -> int:
    """Bytes of the compact JSON `tools/list` result a handshake-era client receives: the context it costs."""
    async with Client(server, mode="legacy") as client:
        result = await client.list_tools_mcp()
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return len(json.dumps({"tools": wire["tools"]}, separators=(",", ":")).encode())


class ContractSuite:
    budget: ClassVar[int]
    """The most bytes tools/list may cost with the default toolsets."""

    secrets: ClassVar[tuple[str, ...]] = ()
    """Values (tokens, passwords) the server was configured with: no error or log line may contain one."""

    @pytest.fixture
    def server(self) -> ReferenceServer:
        raise NotImplementedError("the subclass provides the server under test")

    def failing_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Calls that must fail with an isError result and change nothing."""
        raise NotImplementedError

    def state(self, server: ReferenceServer) -> Any:
        """A comparable picture of what the server's tools can change."""
        raise NotImplementedError

    def stdio_command(self, tmp_path: Path) -> list[str]:
        """argv that serves this server over stdio."""
        raise NotImplementedError

    @pytest.fixture(params=ERAS)
    async def client(self, server: ReferenceServer, request: pytest.FixtureRequest) -> AsyncIterator[Client[Any]]:
        async with Client(server, mode=request.param) as connected:
            yield connected

    # --- schema conventions ----------------------------------------------------------------------------------

    async def test_every_tool_has_a_title_a_description_and_all_four_annotations(self, client: Client[Any]) -> None:
        tools = await client.list_tools()
        assert tools, "a server with no tools has nothing to offer"
        for tool in tools:
            assert tool.title, tool.name
            assert (tool.description or "").strip(), tool.name
            hints = tool.annotations
            assert hints is not None, tool.name
            for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
                assert isinstance(getattr(hints, hint), bool), f"{tool.name}: {hint} missing"

    async def test_no_schema_holds_a_keywordless_subschema(self, client: Client[Any]) -> None:
        """`items: {}` means any item, and clients (the MCP Inspector) warn about it: say nothing instead."""

        def empty_parts(node: Any, where: str) -> list[str]:
            found = []
            if isinstance(node, dict):
                for key, value in node.items():
                    if key in ("items", "additionalProperties") and value == {}:
                        found.append(f"{where}.{key}")
                    found += empty_parts(value, f"{where}.{key}")
            elif isinstance(node, list):
                for index, value in enumerate(node):
                    found += empty_parts(value, f"{where}[{index}]")
            return found

        for tool in await client.list_tools():
            problems = empty_parts(tool.input_schema, "input") + empty_parts(tool.output_schema or {}, "output")
            assert not problems, f"{tool.name}: {problems}"

    async def test_tool_names_are_snake_case_verb_noun(self, client: Client[Any]) -> None:
        for tool in await client.list_tools():
            assert _NAME.match(tool.name), tool.name

    async def test_pagination_has_one_shape(self, client: Client[Any]) -> None:
        for tool in await client.list_tools():
            properties = tool.input_schema.get("properties", {})
            if "limit" in properties:
                limit = properties["limit"]
                assert limit.get("type") == "integer", tool.name
                # The server enforces limit >= 1 unadvertised; a smaller minimum shown would be wrong.
                assert limit.get("minimum", 1) >= 1, f"{tool.name}: limit's minimum is 1"
                assert "maximum" in limit, f"{tool.name}: limit needs a maximum"
            if "cursor" in properties:
                assert "limit" in properties, f"{tool.name} pages with cursor but has no limit"
                output = (tool.output_schema or {}).get("properties", {})
                assert "next_cursor" in output, f"{tool.name} takes a cursor but gives no next_cursor"

    vocabulary: ClassVar[frozenset[str]] = frozenset({"list_changed"})
    """snake_case words the server's texts may use that are neither tools, parameters nor result fields."""

    async def test_every_tool_a_text_names_is_one_of_its_own(self, server: ReferenceServer) -> None:
        """Instructions, descriptions, prompts and error messages name only tools this server has.

        A model that reads "use stat_path" and calls it gets -32602. Every snake_case word in those texts must
        be one of the server's tools (in any toolset), a parameter or result field of one, or in `vocabulary`.
        Error messages are read from the source: the string literals in `raise` statements and `hint=`
        arguments of the server's own package, since no test could provoke every one.
        """
        definitions = [d for t in server.toolsets.available for d in t.tools]
        known = set(self.vocabulary) | {t.name for t in server.toolsets.available}
        for definition in definitions:
            built = definition.build()
            known.add(built.name)
            known.update(_field_names(built.parameters))
            known.update(_field_names(built.output_schema or {}))
        texts = {"instructions": server.instructions or ""}
        texts.update({f"description of {d.name}": inspect.getdoc(d.fn) or "" for d in definitions})
        async with Client(server, mode="legacy") as client:
            for prompt in await client.list_prompts():
                arguments = {a.name: "x" for a in prompt.arguments or [] if a.required}
                rendered = await client.get_prompt(prompt.name, arguments)
                texts[f"prompt {prompt.name}"] = "\n".join(getattr(m.content, "text", "") for m in rendered.messages)
        texts.update(_error_texts({d.fn.__module__ for d in definitions}))
        strangers = {
            f"{where}: {word}" for where, text in texts.items() for word in _SNAKE.findall(text) if word not in known
        }
        assert not strangers, f"texts name tools this server does not have: {sorted(strangers)}"

    async def test_tools_list_is_within_its_budget(self, server: ReferenceServer) -> None:
        size = await tools_list_bytes(server)
        assert size <= self.budget, f"tools/list is {size:,} bytes; the budget is {self.budget:,}"

    # --- the error split -------------------------------------------------------------------------------------

    async def test_unknown_tool_is_a_protocol_error(self, client: Client[Any]) -> None:
        with pytest.raises(MCPError) as raised:
            await client.call_tool_mcp("no_such_tool", {})
        assert raised.value.error.code == INVALID_PARAMS
        assert "no_such_tool" in raised.value.error.message

    async def test_arguments_failing_the_schema_are_a_tool_error_naming_the_field(self, client: Client[Any]) -> None:
        tool, field = await _tool_with_required_argument(client)
        result = await client.call_tool_mcp(tool, {field: {"surely": ["not", "valid"]}})
        assert result.is_error
        text = _text(result)
        assert field in text, text
        assert "https://" not in text, f"pydantic's links are noise to a model: {text}"

    async def test_an_unknown_argument_is_a_tool_error_naming_it(self, client: Client[Any]) -> None:
        """Schemas are advertised without `additionalProperties: false`: the server, not the hint, refuses."""
        tool, field = await _tool_with_required_argument(client)
        listed = {t.name: t for t in await client.list_tools()}
        assert "additionalProperties" not in listed[tool].input_schema
        result = await client.call_tool_mcp(tool, {field: "x", "no_such_argument": 1})
        assert result.is_error
        text = _text(result)
        assert "no_such_argument" in text, text
        assert "Unexpected keyword argument" in text, text

    async def test_failing_calls_are_tool_errors_and_change_nothing(
        self, server: ReferenceServer, client: Client[Any]
    ) -> None:
        for name, arguments in self.failing_calls():
            before = self.state(server)
            result = await client.call_tool_mcp(name, arguments)
            assert result.is_error, f"{name}({arguments}) should fail"
            assert self.state(server) == before, f"{name}({arguments}) failed but changed the state"
            text = _text(result)
            assert text.strip(), f"{name}: an error needs a message"
            _assert_clean(text, self.secrets)

    async def test_structured_results_match_their_output_schema_and_fit_the_budget(
        self, client: Client[Any], server: ReferenceServer
    ) -> None:
        tools = {tool.name: tool for tool in await client.list_tools()}
        for name, arguments in self.sample_calls():
            result = await client.call_tool_mcp(name, arguments)
            assert not result.is_error, f"{name}: {_text(result)}"
            assert_within_budget(result, _tool_budget(server, name))
            schema = tools[name].output_schema
            if schema is not None:
                assert result.structured_content is not None, name
                jsonschema.validate(result.structured_content, schema)
                rendered = _text(result)
                assert rendered != json.dumps(result.structured_content), f"{name} sends the same JSON twice"

    def sample_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """Calls that must succeed; their structured content is checked against the tool's outputSchema."""
        return []

    # --- the wire --------------------------------------------------------------------------------------------

    def test_stdio_speaks_only_json_rpc_and_exits_when_stdin_closes(self, tmp_path: Path) -> None:
        with StdioWire(self.stdio_command(tmp_path)) as wire:
            init = wire.initialize()
            assert "result" in init, init
            listed = wire.request("tools/list")
            assert listed["result"]["tools"], listed
            unknown = wire.request("tools/call", {"name": "no_such_tool", "arguments": {}})
            assert unknown["error"]["code"] == INVALID_PARAMS
            assert wire.close() == 0
            for line in wire.raw_lines:
                assert json.loads(line)["jsonrpc"] == "2.0"
            _assert_clean(wire.stderr, self.secrets, tracebacks_allowed=True)


async def _tool_with_required_argument(client: Client[Any]) -> tuple[str, str]:
    for tool in await client.list_tools():
        required = tool.input_schema.get("required", [])
        if required:
            return tool.name, required[0]
    pytest.skip("no tool takes a required argument")


def _tool_budget(server: ReferenceServer, name: str) -> int:
    definition = server.toolsets.definition(name)
    return definition.budget if definition else DEFAULT_BUDGET


def _field_names(schema: Any) -> set[str]:
    """Every property name anywhere in a JSON Schema (nested objects and $defs included)."""
    names: set[str] = set()
    if isinstance(schema, dict):
        names.update(schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else ())
        for value in schema.values():
            names |= _field_names(value)
    elif isinstance(schema, list):
        for item in schema:
            names |= _field_names(item)
    return names


def _sources(modules: set[str]) -> list[Path]:
    """The source files whose errors the tools of `modules` can raise: a server's whole package, but of the
    helpers only the module that defines the tool (the discovery pair); the rest of the helpers speaks to the
    server's author, not to the model."""
    files: set[Path] = set()
    for module in modules:
        package = module.split(".")[0]
        spec = importlib.util.find_spec(module if package == "mcp_server_core" else package)
        if spec is None:
            continue
        if package == "mcp_server_core":
            files.update([Path(spec.origin)] if spec.origin else [])
        else:
            for folder in spec.submodule_search_locations or []:
                files.update(Path(folder).rglob("*.py"))
    return sorted(files)


def _error_texts(modules: set[str]) -> dict[str, str]:
    """The literal text of every `raise` and `hint=` the tools of these modules can raise, by file and line."""
    found: dict[str, str] = {}
    for source in _sources(modules):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                carrier: ast.AST = node.exc
            elif isinstance(node, ast.keyword) and node.arg == "hint":
                carrier = node.value
            else:
                continue
            strings = [n.value for n in ast.walk(carrier) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if strings:
                found[f"{source.name}:{getattr(node, 'lineno', 0)}"] = " ".join(strings)
    return found


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def assert_no_secret(text: str, secrets: Iterable[str], *, prefix: int | None = None) -> None:
    """No secret appears in `text` (answers, logs, audit lines, spans), nor with `prefix` its first `prefix` characters:
    the redactor keeps at most seven, so a longer start is a leak. The message never repeats the secret."""
    for number, secret in enumerate(secrets, 1):
        at = text.find(secret[:prefix] if prefix else secret)  # the whole secret starts with its start
        assert at < 0, f"secret {number} (or its start) leaked after: {text[max(at - 120, 0) : at]!r}"


def _assert_clean(text: str, secrets: tuple[str, ...], *, tracebacks_allowed: bool = False) -> None:
    assert_no_secret(text, secrets)
    assert redact(text) == text, f"an unredacted secret shape leaked: {text[:300]!r}"
    if not tracebacks_allowed:
        for marker in _TRACEBACK_MARKERS:
            assert marker not in text, f"a traceback reached the client: {text[:300]!r}"
