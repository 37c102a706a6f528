"""The error split, as a client sees it in both protocol eras."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_server_core import ReferenceServer, Toolset
from mcp_server_core.testing import ERAS

from .conftest import SECRET, build


@pytest.fixture(params=ERAS)
async def client(server: ReferenceServer, request: pytest.FixtureRequest) -> Any:
    async with Client(server, mode=request.param) as connected:
        yield connected


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


async def test_unknown_tool_is_invalid_params_with_a_suggestion(client: Any) -> None:
    with pytest.raises(MCPError) as raised:
        await client.call_tool_mcp("add_number", {"a": 1})
    assert raised.value.error.code == -32602
    assert "Did you mean 'add_numbers'" in raised.value.error.message


async def test_a_tool_of_a_disabled_toolset_is_unknown(client: Any) -> None:
    with pytest.raises(MCPError) as raised:
        await client.call_tool_mcp("write_thing", {"text": "x"})
    assert raised.value.error.code == -32602


async def test_schema_failures_are_tool_errors_naming_each_field(client: Any) -> None:
    result = await client.call_tool_mcp("add_numbers", {"a": 50, "b": "x"})
    assert result.is_error
    message = text(result)
    assert "a: Input should be less than or equal to 10" in message
    assert "b: Input should be a valid integer" in message
    assert "errors.pydantic.dev" not in message


async def test_a_missing_argument_is_named(client: Any) -> None:
    result = await client.call_tool_mcp("add_numbers", {})
    assert result.is_error
    assert "a: Missing required argument" in text(result)


async def test_a_domain_failure_keeps_its_actionable_message(client: Any) -> None:
    result = await client.call_tool_mcp("divide_numbers", {"a": 1, "b": 0})
    assert result.is_error
    assert text(result) == "Cannot divide by zero. Pass a non-zero b."


async def test_an_unexpected_exception_is_masked_and_its_traceback_only_logged(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        result = await client.call_tool_mcp("explode_now", {})
    assert result.is_error
    message = text(result)
    assert message == "Tool 'explode_now' failed unexpectedly (RuntimeError); the details are in the server log."
    assert SECRET not in message
    assert any(record.exc_info for record in caplog.records), "the traceback belongs in the log"


async def test_typed_results_send_structured_content_and_a_compact_rendering(client: Any) -> None:
    result = await client.call_tool_mcp("add_numbers", {"a": 2, "b": 3})
    assert result.structured_content == {"total": 5, "parts": [2, 3]}
    assert text(result) == "2 + 3 = 5"


async def test_tools_list_carries_no_fastmcp_bookkeeping_and_titles_once(client: Any) -> None:
    listed = await client.list_tools_mcp()
    for tool in listed.tools:
        assert tool.meta is None or "fastmcp" not in tool.meta
        assert tool.annotations is not None
        assert tool.annotations.title is None
        assert tool.title


async def test_text_tools_have_no_output_schema(client: Any) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}
    assert tools["divide_numbers"].output_schema is None
    assert tools["add_numbers"].output_schema is not None


async def test_read_only_server_has_no_writing_tools() -> None:
    async with Client(build(read_only=True, enabled_toolsets="all")) as client:
        names = {tool.name for tool in await client.list_tools()}
    assert "write_thing" not in names
    assert "add_numbers" in names


async def test_subscribing_to_an_unknown_resource_is_invalid_params() -> None:
    async with Client(build(), mode="legacy") as client:
        with pytest.raises(MCPError) as raised, pytest.warns(MCPDeprecationWarning):
            await client.session.subscribe_resource("nothing://here")
    assert raised.value.error.code == -32602


async def test_background_jobs_run_while_serving_and_shutdown_steps_follow_their_cancellation() -> None:
    import asyncio

    events: list[str] = []
    server = ReferenceServer("lifecycle", version="0")

    async def poller() -> None:
        events.append("started")
        try:
            await asyncio.Event().wait()
        finally:
            events.append("cancelled")

    async def failing() -> None:
        raise RuntimeError("boom")

    server.run_in_background(poller)
    server.run_in_background(failing)
    server.on_shutdown(lambda: events.append("closed"))
    async with Client(server) as client:
        await client.list_tools()
        assert events == ["started"]
    assert events == ["started", "cancelled", "closed"]


async def test_a_call_past_the_call_timeout_is_an_error_at_the_deadline_and_the_server_goes_on() -> None:
    import asyncio
    import threading

    released = threading.Event()  # what the sync tools wait on: an upstream that never finishes its answer
    stopped: list[str] = []
    blocking = Toolset("blocking", "Tools that wait")

    @blocking.tool(title="Read slowly", read_only=True, open_world=True)
    def read_slowly() -> str:
        """Use to wait for an upstream in a worker thread."""
        released.wait(30)
        return "read"

    @blocking.tool(title="Write slowly", read_only=False, open_world=True, destructive=False)
    def write_slowly() -> str:
        """Use to write through a slow upstream."""
        released.wait(30)
        return "written"

    @blocking.tool(title="Wait forever", read_only=True, open_world=True)
    async def wait_forever() -> str:
        """Use to wait on the event loop."""
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append("async tool cancelled")
        return "never"

    server = ReferenceServer("deadline", version="0", toolsets=[blocking])
    server.call_timeout_s = 0.3
    try:
        async with Client(server) as client:
            # The guard only keeps a regression from hanging the suite; the answers come at 0.3 s.
            read, write, waited = await asyncio.wait_for(
                asyncio.gather(
                    client.call_tool_mcp("read_slowly", {}),
                    client.call_tool_mcp("write_slowly", {}),
                    client.call_tool_mcp("wait_forever", {}),
                ),
                timeout=20,
            )
            assert [read.is_error, write.is_error, waited.is_error] == [True, True, True]
            assert "did not finish within 0.3 s" in text(read)
            assert "Retry" in text(read)
            assert "may still complete" in text(write)
            assert stopped == ["async tool cancelled"]
            released.set()
            server.call_timeout_s = None
            assert text(await client.call_tool_mcp("read_slowly", {})) == "read"
    finally:
        released.set()


async def test_resource_reads_and_prompts_take_the_call_slots_and_the_call_deadline() -> None:
    """They run domain code as tools do (a file read, a query): a slow one is an error at the deadline, and one
    client's reads wait in its own queue of slots, past which they are refused, instead of each holding a
    worker thread."""
    import asyncio
    import threading

    from fastmcp.resources import FunctionResource

    released = threading.Event()  # what the sync functions wait on: an upstream that never answers
    server = ReferenceServer("deadline", version="0")
    server.add_resource(
        FunctionResource.from_function(lambda: released.wait(30) and "read", uri="slow://one", name="slow")
    )

    @server.prompt
    def slow_prompt() -> str:
        """Wait for an upstream."""
        released.wait(30)
        return "prompted"

    server.call_timeout_s = 0.3
    server.max_calls_per_client = 1
    server.max_queued_calls_per_client = 1
    try:
        async with Client(server) as client:
            # The guard only keeps a regression from hanging the suite; the answers come at 0.3 s and 0.6 s.
            outcomes = await asyncio.wait_for(
                asyncio.gather(
                    client.read_resource_mcp("slow://one"),
                    client.get_prompt_mcp("slow_prompt"),
                    client.read_resource_mcp("slow://one"),
                    return_exceptions=True,
                ),
                timeout=20,
            )
            messages = [str(outcome) for outcome in outcomes]
            assert all(isinstance(outcome, MCPError) for outcome in outcomes), messages
            assert sum("did not finish within 0.3 s" in m for m in messages) == 2, messages
            assert sum("Too many calls from this client" in m for m in messages) == 1, messages
            assert any("Reading 'slow://one'" in m for m in messages), messages
            released.set()
            server.call_timeout_s = None
            assert (await client.read_resource_mcp("slow://one")).contents[0].text == "read"  # type: ignore[union-attr]
    finally:
        released.set()
