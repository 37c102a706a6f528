"""The connection layer of the HTTP front: what one TCP connection may cost before any request reaches the app.

uvicorn stays the server (its graceful drain and the SO_REUSEPORT workers are built on it, serving.py), with its
pure-Python h11 protocol, which this subclass closes four gaps in:
- **Headers have a deadline.** uvicorn waits for a request's headers for ever, so 300 connections dribbling a
  byte now and then held 300 descriptors for as long as they liked. Here a request's headers must be complete
  within `header_timeout_s` of its first byte (or of the connection opening): a connection still short of them
  gets 408 and is closed, a silent one is just closed. Idle keep-alive connections close after uvicorn's 5 s.
- **Headers have a size.** Past `max_header_bytes` the connection gets 431 and is closed before any header is
  parsed or any token verified (httptools took 64 KiB and verified it; 1 MiB broke the pipe).
- **A slot is for a request.** uvicorn counts every open connection against `limit_concurrency` and answers 503
  past it, so `max_connections` sockets that never finished a request (any anonymous client can open them, and
  each lives up to the header deadline) locked every other client out. Here a connection that brings the count
  to the cap closes the one that has waited longest with no request in flight (idle, still short of its
  headers, or answered with its body still coming); a connection answering a request (a tool call, a session's
  GET stream) is never closed for room.
- **An answered request's body has a deadline.** A request answered before its body was read (401, 503) left
  uvicorn reading the rest for as long as it came, each byte putting off the keep-alive close: the rest now gets
  the keep-alive time, once.
What stays uvicorn's: the 503 when every slot holds a request in flight, and the body, whose deadline and byte
budget the app's RequestGuard keeps (http.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["MAX_HEADER_BYTES", "guarded_protocol"]

MAX_HEADER_BYTES = 32 * 1024
"""The request line and headers together; a browser's are under 8 KiB, a JWT under 4 KiB."""


def _error(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


class _GuardedH11Protocol(H11Protocol):
    header_timeout_s = 10.0
    max_header_bytes = MAX_HEADER_BYTES

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_bytes = 0
        self._header_deadline: asyncio.TimerHandle | None = None
        self._waiting_since = self.loop.time()
        self._drain_deadline: asyncio.TimerHandle | None = None
        self._arm_header_deadline()
        if self.limit_concurrency is not None and len(self.connections) >= self.limit_concurrency:
            self._make_room()

    def _make_room(self) -> None:
        """Close the connection that has waited longest with no request in flight, if there is one."""
        waiting = [
            other
            for other in self.connections
            if other is not self and isinstance(other, _GuardedH11Protocol) and other._between_requests()
        ]
        if waiting:
            min(waiting, key=lambda other: other._waiting_since)._give_up_slot()

    def _between_requests(self) -> bool:
        # Answered is enough, even with the request's body still coming (a 401 goes out before the body is read).
        return self.cycle is None or self.cycle.response_complete

    def _give_up_slot(self) -> None:
        # Out of the count now, not when the loop gets to connection_lost: the request that arrives next counts.
        self.connections.discard(self)
        if self._header_deadline is not None and self._header_bytes:  # a request begun: tell it why
            self._refuse(503, "Service Unavailable", "the server is at its connection limit; retry")
        else:
            self._disarm_header_deadline()
            self.transport.close()

    def on_response_complete(self) -> None:
        self._waiting_since = self.loop.time()
        super().on_response_complete()
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            # Answered before its body was all in (401, uvicorn's 503): uvicorn would read the rest for ever, each
            # byte putting off its keep-alive close, so a client dribbling an endless body held the connection.
            # The rest gets the keep-alive time, once.
            self._cancel_drain_deadline()
            self._drain_deadline = self.loop.call_later(self.timeout_keep_alive, self._drain_too_slow)

    def _drain_too_slow(self) -> None:
        self._drain_deadline = None
        if self.conn.their_state is h11.SEND_BODY and self.cycle is not None and self.cycle.response_complete:
            self.transport.close()

    def _cancel_drain_deadline(self) -> None:
        if self._drain_deadline is not None:
            self._drain_deadline.cancel()
            self._drain_deadline = None

    def _arm_header_deadline(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _awaiting_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def data_received(self, data: bytes) -> None:
        if self._awaiting_headers():
            if self._header_deadline is None:  # the first bytes of the next request on a kept-alive connection
                self._header_bytes = 0
                self._arm_header_deadline()
            room = self.max_header_bytes - self._header_bytes  # header bytes still allowed before the blank line
            # A segment may carry the end of the headers and the start of the body: count only up to the blank
            # line, if it comes within the room left (it cannot lie in an earlier segment: h11 would have moved on).
            if len(data) > room and data.find(b"\r\n\r\n", 0, max(room, 0) + 4) < 0:
                self._refuse(431, "Request Header Fields Too Large", "the request's headers are too large")
                return
            self._header_bytes += len(data)
        super().data_received(data)
        if not self._awaiting_headers():
            self._disarm_header_deadline()

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing() or not self._awaiting_headers():
            return
        if self._header_bytes:
            self._refuse(408, "Request Timeout", f"the request's headers took over {self.header_timeout_s:g} s")
        else:
            self.transport.close()

    def _refuse(self, status: int, reason: str, message: str) -> None:
        self._disarm_header_deadline()
        if not self.transport.is_closing():
            self.transport.write(_error(status, reason, message))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        self._cancel_drain_deadline()
        super().connection_lost(exc)


def guarded_protocol(*, header_timeout_s: float, max_header_bytes: int = MAX_HEADER_BYTES) -> type[Any]:
    """uvicorn's h11 protocol with these bounds, for `uvicorn.Config(http=...)`."""
    return type(
        "GuardedH11Protocol",
        (_GuardedH11Protocol,),
        {"header_timeout_s": header_timeout_s, "max_header_bytes": max_header_bytes},
    )
