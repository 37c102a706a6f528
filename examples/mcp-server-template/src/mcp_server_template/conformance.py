"""The fixtures the official MCP conformance suite calls by name, served with `--conformance`.

The suite (`@modelcontextprotocol/conformance`, run by tests/test_conformance.py) asks a server for fixed
tool, resource and prompt names and checks what comes back. None of them belong to the notes domain: they
exist so the template, and every fork that keeps this module, proves it speaks the whole protocol (content
types, logging, progress, sampling, elicitation, resumable SSE, completions) through the same helpers as
its real tools. The payloads are small and made up here; images and sounds are generated, not stored.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import io
import json
import struct
import warnings
import wave
import zlib
from collections.abc import Iterator
from typing import Any

import mcp_types
from fastmcp import Context
from fastmcp.prompts import Message
from fastmcp.server.completions import CompletionReference, CompletionValues
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_server_core import InvalidArgument, ReferenceServer, Refused, Toolset

__all__ = ["add_conformance_fixtures", "conformance_toolset"]

# --- generated media -------------------------------------------------------------------------------------


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one flat colour, built by hand (8-bit truecolour, no filter)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _wav(milliseconds: int, rate: int = 8000) -> bytes:
    """A valid mono 8-bit WAV of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        out.writeframes(b"\x80" * (rate * milliseconds // 1000))
    return buffer.getvalue()


PNG = _png(2, 2, (32, 96, 224))
PNG_B64 = base64.b64encode(PNG).decode()
WAV_B64 = base64.b64encode(_wav(20)).decode()

SIMPLE_TEXT = "This is a simple text response for testing."
ERROR_TEXT = "This tool intentionally returns an error for testing"
STEP_DELAY = 0.05
"""Seconds between the notifications of one call, so a client sees them arrive one by one."""


def _image() -> mcp_types.ImageContent:
    return mcp_types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")


def _text(text: str) -> mcp_types.TextContent:
    return mcp_types.TextContent(type="text", text=text)


def _embedded(uri: str, text: str, mime_type: str = "text/plain") -> mcp_types.EmbeddedResource:
    return mcp_types.EmbeddedResource(
        type="resource", resource=mcp_types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    )


# --- elicitation forms: written out, since the suite checks the exact enum shapes of SEP-1330 -------------

CONTACT_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "title": "Username", "description": "User's response"},
        "email": {"type": "string", "title": "Email", "description": "User's email address", "format": "email"},
    },
    "required": ["username", "email"],
}

DEFAULTS_FORM: dict[str, Any] = {  # SEP-1034: every primitive type may carry a default
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "default": "John Doe"},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150, "default": 30},
        "score": {"type": "number", "title": "Score", "minimum": 0, "maximum": 100, "default": 95.5},
        "status": {
            "type": "string",
            "title": "Status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "title": "Verified", "default": True},
    },
}

ENUMS_FORM: dict[str, Any] = {  # SEP-1330: the five ways to offer choices
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "title": "Pick one", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "title": "Pick one (labelled)",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "title": "Pick one (legacy labels)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "title": "Pick several",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "title": "Pick several (labelled)",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@contextlib.contextmanager
def _legacy_era_feature() -> Iterator[None]:
    """Silence the SDK's warning that logging and sampling are deprecated in 2026-07-28: the suite's client is
    a 2025-11-25 one, for which both are current."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


async def _elicit(ctx: Context, message: str, form: dict[str, Any]) -> mcp_types.ElicitResult:
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        raise Refused("This client did not declare the elicitation capability.", hint="Connect with one that does.")
    # A hand-written form: fastmcp's ctx.elicit derives the schema from a type, which cannot express SEP-1330.
    return await ctx.session.elicit_form(message, form, related_request_id=ctx.request_id)


def _elicitation_summary(result: mcp_types.ElicitResult) -> str:
    content = json.dumps(result.content, sort_keys=True) if result.content is not None else "none"
    return f"Elicitation completed: action={result.action}, content={content}"


# --- the tools -------------------------------------------------------------------------------------------


def conformance_toolset() -> Toolset:
    """Every fixture tool the suite calls, as one toolset (off unless asked for: `--conformance` turns it on)."""
    toolset = Toolset("conformance", "Fixtures of the official MCP conformance suite", default=False)
    fixture = toolset.tool

    @fixture(title="Simple text", read_only=True, open_world=False)
    def test_simple_text() -> str:
        """Use to check plain text results: returns one fixed sentence."""
        return SIMPLE_TEXT

    @fixture(title="Image content", read_only=True, open_world=False)
    def test_image_content() -> ToolResult:
        """Use to check image results: returns a small PNG."""
        return ToolResult(content=[_image()])

    @fixture(title="Audio content", read_only=True, open_world=False)
    def test_audio_content() -> ToolResult:
        """Use to check audio results: returns a short WAV of silence."""
        return ToolResult(content=[mcp_types.AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")])

    @fixture(title="Embedded resource", read_only=True, open_world=False)
    def test_embedded_resource() -> ToolResult:
        """Use to check embedded resources in results: returns one text resource."""
        return ToolResult(content=[_embedded("test://embedded-resource", "This is an embedded resource content.")])

    @fixture(title="Mixed content", read_only=True, open_world=False)
    def test_multiple_content_types() -> ToolResult:
        """Use to check results that mix content types: returns text, an image and a resource."""
        return ToolResult(
            content=[
                _text("Multiple content types test:"),
                _image(),
                _embedded(
                    "test://mixed-content-resource",
                    json.dumps({"test": "data", "value": 123}),
                    "application/json",
                ),
            ]
        )

    @fixture(title="Logging", read_only=True, open_world=False)
    async def test_tool_with_logging(ctx: Context) -> str:
        """Use to check log notifications: sends three info messages while it runs."""
        for step in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            with _legacy_era_feature():
                await ctx.info(step, logger_name="conformance")
            await asyncio.sleep(STEP_DELAY)
        return "Logged three messages."

    @fixture(title="Error result", read_only=True, open_world=False)
    def test_error_handling() -> str:
        """Use to check error results: always fails with isError true."""
        raise InvalidArgument(ERROR_TEXT)

    @fixture(title="Progress", read_only=True, open_world=False)
    async def test_tool_with_progress(ctx: Context) -> str:
        """Use to check progress notifications: reports 0, 50 and 100 of 100 for the request's progress token."""
        for done in (0, 50, 100):
            await ctx.report_progress(done, 100, f"{done}% done")
            if done < 100:
                await asyncio.sleep(STEP_DELAY)
        return "Progress reported: 0, 50, 100 of 100."

    @fixture(title="Sampling", read_only=True, open_world=False)
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Use to check sampling: asks the client's model to answer the prompt and returns what it said."""
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.sampling is None:
            raise Refused("This client did not declare the sampling capability.", hint="Connect with one that does.")
        with _legacy_era_feature():
            sampling = ctx.session.create_message(
                [mcp_types.SamplingMessage(role="user", content=_text(prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        answer = await sampling
        text = answer.content.text if isinstance(answer.content, mcp_types.TextContent) else f"[{answer.content.type}]"
        return f"LLM response: {text}"

    @fixture(title="Elicitation", read_only=True, open_world=False)
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Use to check elicitation: asks the user for a username and an email address."""
        result = await _elicit(ctx, message, CONTACT_FORM)
        content = json.dumps(result.content, sort_keys=True) if result.content is not None else "none"
        return f"User response: action={result.action}, content={content}"

    @fixture(title="Elicitation defaults", read_only=True, open_world=False)
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Use to check elicitation defaults (SEP-1034): a form whose every field has a default."""
        return _elicitation_summary(await _elicit(ctx, "Review these details; each has a default.", DEFAULTS_FORM))

    @fixture(title="Elicitation enums", read_only=True, open_world=False)
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Use to check elicitation choices (SEP-1330): single and multi select, with and without labels."""
        return _elicitation_summary(await _elicit(ctx, "Choose from each list.", ENUMS_FORM))

    @fixture(title="SSE reconnection", read_only=True, open_world=False)
    async def test_reconnection(ctx: Context) -> str:
        """Use to check resumable SSE: closes the response stream mid-call, then answers on the resumed one."""
        # A no-op unless the server keeps an event store (--resumable) and the client is 2025-11-25 or later.
        await ctx.close_sse_stream()
        await asyncio.sleep(2 * STEP_DELAY)
        return "Reconnection test completed."

    return toolset


class DeclaredSchemaTool(Tool):
    """A tool whose inputSchema reaches tools/list exactly as written, `$schema`, `$defs` and `$ref` included.

    fastmcp inlines `$ref` and drops `$defs` of every listed tool (its DereferenceRefsMiddleware); that
    middleware rewrites `parameters`, so this tool lists `declared_schema` instead.
    """

    declared_schema: dict[str, Any]

    def to_mcp_tool(self, **overrides: Any) -> mcp_types.Tool:
        return super().to_mcp_tool(**{"inputSchema": self.declared_schema, **overrides})

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        allowed = set(self.declared_schema.get("properties", {}))
        unknown = sorted(set(arguments) - allowed)
        if unknown:
            raise InvalidArgument(
                f"Unknown arguments: {', '.join(unknown)}.", hint=f"This tool takes only {', '.join(sorted(allowed))}."
            )
        return ToolResult(content=[_text(f"Received: {json.dumps(arguments, sort_keys=True)}")])


JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def json_schema_tool() -> DeclaredSchemaTool:
    title = "JSON Schema 2020-12"
    return DeclaredSchemaTool(
        name="json_schema_2020_12_tool",
        title=title,
        description="Tool with JSON Schema 2020-12 features: $schema, $defs with $ref, additionalProperties false.",
        parameters=JSON_SCHEMA_2020_12,
        declared_schema=JSON_SCHEMA_2020_12,
        annotations=mcp_types.ToolAnnotations(
            title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )


# --- resources, prompts, completions ---------------------------------------------------------------------

ARGUMENT_SUGGESTIONS = {
    "arg1": ["test", "testing", "tested", "example"],
    "arg2": ["test-value", "other-value"],
}
TEMPLATE_IDS = ["123", "456", "789"]


def add_conformance_fixtures(server: ReferenceServer) -> None:
    """Register the suite's resources, prompts, completions and the hand-written-schema tool on `server`."""
    server.add_tool(json_schema_tool())

    @server.resource(
        "test://static-text", name="static-text", description="A fixed text resource", mime_type="text/plain"
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary", name="static-binary", description="A small PNG image", mime_type="image/png"
    )
    def static_binary() -> bytes:
        return PNG

    @server.resource(
        "test://template/{id}/data",
        name="template-data",
        description="A JSON document for any id",
        mime_type="application/json",
    )
    def template_data(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource(
        "test://watched-resource",
        name="watched-resource",
        description="A resource to subscribe to",
        mime_type="text/plain",
    )
    def watched_resource() -> str:
        return "Subscribe to this resource to hear notifications/resources/updated."

    @server.prompt(name="test_simple_prompt", description="A prompt with no arguments")
    def test_simple_prompt() -> list[Message]:
        return [Message("This is a simple prompt for testing.")]

    @server.prompt(name="test_prompt_with_arguments", description="A prompt that quotes its two arguments")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
        return [Message(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @server.prompt(name="test_prompt_with_embedded_resource", description="A prompt that embeds a resource")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:  # noqa: N803 - the suite's name
        return [
            Message(_embedded(resourceUri, "Embedded resource content for testing.")),
            Message("Please process the embedded resource above."),
        ]

    @server.prompt(name="test_prompt_with_image", description="A prompt that carries an image")
    def test_prompt_with_image() -> list[Message]:
        return [Message(_image()), Message("Please analyze the image above.")]

    earlier = server._completion_handler  # keep whatever the server completed before

    async def complete(
        ref: CompletionReference,
        argument: mcp_types.CompletionArgument,
        context: mcp_types.CompletionContext | None,
    ) -> CompletionValues:
        if isinstance(ref, mcp_types.PromptReference) and ref.name == "test_prompt_with_arguments":
            candidates = ARGUMENT_SUGGESTIONS.get(argument.name, [])
        elif isinstance(ref, mcp_types.ResourceTemplateReference) and ref.uri == "test://template/{id}/data":
            candidates = TEMPLATE_IDS if argument.name == "id" else []
        elif earlier is not None:
            values = earlier(ref, argument, context)
            return await values if inspect.isawaitable(values) else values
        else:
            return None
        return [c for c in candidates if c.startswith(argument.value)]

    server.add_completion_handler(complete)
