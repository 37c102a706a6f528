"""The stdio transport: one JSON-RPC message per line, and an answer for every line that is not one.

The SDK's transport drops a malformed line silently, so a client waits forever. Here:
- a line that is not JSON gets -32700 (id null); JSON that is not a JSON-RPC message gets -32600, with the id
  when one can be read; a batch gets -32600 (MCP dropped batches in 2025-06-18);
- a line over `max_line_bytes` is skipped without being held in memory whole and gets -32600, with its id
  when the line's first or last 64 KiB show it (else the caller would wait for its own timeout);
- once `max_pending` requests wait for their answers, no more is read until one is answered: a client that
  writes without reading stdout finds its writes blocking, instead of the server holding every answer it
  cannot write until memory runs out;
- when stdin closes, or `stop` is set (SIGTERM), requests already read are answered (up to `drain_timeout`)
  before the server exits; but `stop` set after stdin closed ends that drain at once, and the calls in flight
  are stopped: that is a client's shutdown (the SDKs close stdin, wait 2 s, send SIGTERM, and SIGKILL 2 s
  later), and the client that left waits for no answer, while a SIGKILL would leave its calls' work running;
  an open `subscriptions/listen` stream owes no answer and is not waited for;
- while serving, fd 0 reads the null device and fd 1 writes to stderr, so a stray print() in domain code or a
  child process cannot corrupt the wire.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId

from mcp_server_core.conventions.tools import MAX_MESSAGE_BYTES
from mcp_server_core.transport.jsonrpc import (
    OVERSIZED_EDGE_BYTES,
    MessageRefused,
    error_message,
    oversized_id,
    read_message,
)

__all__ = ["MAX_LINE_BYTES", "stdio_transport"]

MAX_LINE_BYTES = MAX_MESSAGE_BYTES
"""A request larger than this is refused: 8 MiB is far beyond any honest tool call."""

MAX_PENDING = 256
"""Requests read and not yet answered before reading pauses: far more than a host waits on at once (the
helpers run 4 calls per client and queue 32), few enough that their answers fit in a few megabytes."""


def _error(request_id: RequestId | None, code: int, message: str) -> SessionMessage:
    return SessionMessage(error_message(request_id, code, message))


def _claim_std_streams() -> tuple[int, int, int, int]:
    """Private duplicates of fd 0 and 1 for the wire; fd 0 then reads /dev/null and fd 1 writes to stderr."""
    saved_in, saved_out = os.dup(0), os.dup(1)
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    sys.stdout.flush()
    os.dup2(2, 1)
    return wire_in, wire_out, saved_in, saved_out


def _restore_std_streams(saved_in: int, saved_out: int) -> None:
    sys.stdout.flush()
    os.dup2(saved_in, 0)
    os.dup2(saved_out, 1)
    os.close(saved_in)
    os.close(saved_out)


@asynccontextmanager
async def stdio_transport(
    *,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    drain_timeout: float = 10.0,
    stop: anyio.Event | None = None,
    max_pending: int = MAX_PENDING,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Serve over the process's stdin/stdout (or the given binary files), yielding the SDK's stream pair.

    Setting `stop` (SIGTERM, say) stops reading at once and ends the read side like a closed stdin does: the
    requests already read are answered, within `drain_timeout`, and nothing more is taken.
    """
    saved: tuple[int, int] | None = None
    if stdin is None or stdout is None:
        wire_in, wire_out, saved_in, saved_out = _claim_std_streams()
        saved = (saved_in, saved_out)
        stdin = os.fdopen(wire_in, "rb")
        stdout = os.fdopen(wire_out, "wb")
    source, sink = stdin, stdout

    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    answers = write_send.clone()
    in_flight: Counter[str] = Counter()  # by repr(id): a client may reuse an id, and each use is a request
    # subscriptions/listen streams among them: they owe no answer (they end when their client leaves), so the
    # drain does not wait for them; they still count towards max_pending.
    listening: Counter[str] = Counter()
    idle = anyio.Event()  # set whenever nothing owed is in flight; replaced when a request arrives
    idle.set()
    room = anyio.Event()  # set while fewer than max_pending are in flight; reading waits for it
    room.set()

    def settle() -> None:
        nonlocal idle, room
        pending = in_flight.total()
        owed = pending - listening.total()
        if owed and idle.is_set():
            idle = anyio.Event()
        elif not owed:
            idle.set()
        if pending >= max_pending and room.is_set():
            room = anyio.Event()
        elif pending < max_pending:
            room.set()

    def answered(request_id: str) -> None:
        for requests in (in_flight, listening):
            if requests[request_id] > 1:
                requests[request_id] -= 1
            else:
                requests.pop(request_id, None)
        settle()

    async def read_line() -> bytes:
        # abandon_on_cancel: a read blocked on an idle stdin must not hold up shutdown.
        return await anyio.to_thread.run_sync(source.readline, max_line_bytes + 1, abandon_on_cancel=True)

    reading = anyio.CancelScope()

    async def stop_reading() -> None:
        assert stop is not None
        await stop.wait()
        reading.cancel()

    async def forward(channel: MemoryObjectSendStream[SessionMessage], message: SessionMessage) -> None:
        # Shielded: a stop must not drop a message half-way, or its request would be in flight forever.
        with anyio.CancelScope(shield=True):
            await channel.send(message)

    async def next_line() -> bytes:
        await room.wait()
        return await read_line()

    async def read_lines() -> None:
        while line := await next_line():
            if len(line) > max_line_bytes and not line.endswith(b"\n"):
                tail = line[-OVERSIZED_EDGE_BYTES:]
                while (rest := await read_line()) and not rest.endswith(b"\n"):
                    tail = (tail + rest)[-OVERSIZED_EDGE_BYTES:]
                tail = (tail + rest)[-OVERSIZED_EDGE_BYTES:]
                request_id = oversized_id(line[:OVERSIZED_EDGE_BYTES], tail)
                if request_id is not None:
                    in_flight[repr(request_id)] += 1  # answered like a request read: the writer settles it
                    settle()
                message_text = f"Invalid Request: the message exceeds {max_line_bytes:,} bytes; send less at once."
                await forward(answers, _error(request_id, INVALID_REQUEST, message_text))
                continue
            if not line.strip():
                continue
            try:
                message = read_message(line)
            except MessageRefused as refused:
                await forward(answers, SessionMessage(refused.error))
                continue
            if isinstance(message, JSONRPCRequest):
                in_flight[repr(message.id)] += 1
                if message.method == "subscriptions/listen":
                    listening[repr(message.id)] += 1
                settle()
            elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                # A cancelled request is never answered, so neither the drain nor reading may wait for it.
                answered(repr((message.params or {}).get("requestId")))
            await forward(read_send, SessionMessage(message))

    async def drained() -> None:
        await idle.wait()
        draining.cancel()

    async def client_gone() -> None:
        assert stop is not None
        await stop.wait()
        draining.cancel()

    draining = anyio.CancelScope()

    async def reader() -> None:
        async with read_send, answers:
            with reading:
                await read_lines()
            # stdin closed, or stop was set: let requests already read finish before the read side ends.
            stdin_closed = not reading.cancel_called
            with anyio.move_on_after(drain_timeout), draining:
                async with anyio.create_task_group() as waits:
                    waits.start_soon(drained)
                    if stdin_closed and stop is not None:
                        waits.start_soon(client_gone)

    written = anyio.Event()

    async def writer() -> None:
        async with write_recv:
            async for session_message in write_recv:
                message = session_message.message
                if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                    answered(repr(message.id))
                data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                await anyio.to_thread.run_sync(_write_all, sink, data)
        written.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            if stop is not None:
                tg.start_soon(stop_reading)
            yield read_recv, write_send
            # The server is done: flush what it wrote, then stop reading (stdin may still be open).
            await write_send.aclose()
            with anyio.move_on_after(2):
                await written.wait()
            tg.cancel_scope.cancel()
    finally:
        if saved is not None:
            _restore_std_streams(*saved)


def _write_all(sink: BinaryIO, data: bytes) -> None:
    sink.write(data)
    sink.flush()
