"""Progress a long call reports to its client, from any thread, rate-limited, only when the client asked.

Domain code calls `report_progress(done, total, message)` as work advances (files searched, rows read); the
helpers send `notifications/progress` for the call being served, at most once per `INTERVAL_S` and only if
the request carried a progress token (fastmcp drops it otherwise). Sync tools run in worker threads, so the
notification is handed to the server's event loop.

The spec requires a call's progress to increase with each notification. A call whose work has phases counts
afresh in each (Slack lists 227 channels to find one, then reads 100 messages), so a report that would not
move the call's progress forward is not sent; the next one that does is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from contextvars import ContextVar
from typing import Any

__all__ = ["INTERVAL_S", "report_progress", "send_for_call"]

INTERVAL_S = 0.5


class _Reporter:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.last = 0.0
        self.progress: float | None = None
        """The progress last sent for this call: what the next notification must exceed."""


_current: ContextVar[_Reporter | None] = ContextVar("mcp_server_core_progress", default=None)


def start_reporting() -> object:
    """For the helpers: progress reported in this context (the call's task and its worker threads) is sent on
    this event loop, through fastmcp's context of the call (set deeper in its chain, so looked up when sent)."""
    return _current.set(_Reporter(asyncio.get_running_loop()))


def stop_reporting(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


def report_progress(done: float, total: float | None = None, message: str | None = None) -> None:
    """Tell the client how far the current call has come; a no-op outside a call, too soon after the last
    report sent, or when `done` does not exceed the progress already sent."""
    reporter = _current.get()
    if reporter is None:
        return
    if reporter.progress is not None and done <= reporter.progress:
        return
    now = time.monotonic()
    if reporter.last and now - reporter.last < INTERVAL_S:
        return
    from fastmcp.server.dependencies import get_context

    try:
        context = get_context()
    except RuntimeError:  # not inside fastmcp's handling of a call
        return
    reporter.last, reporter.progress = now, done
    send_for_call(context.report_progress(progress=done, total=total, message=message))


def send_for_call(sending: Coroutine[Any, Any, Any]) -> bool:
    """Send a notification of the current call (progress, a log line) on the server's event loop, from the
    loop or from one of the call's worker threads; False (and nothing sent) outside a call."""
    reporter = _current.get()
    if reporter is None:
        sending.close()
        return False
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is reporter.loop:
        task = running.create_task(sending)
        task.add_done_callback(_quiet)
    else:
        try:
            asyncio.run_coroutine_threadsafe(sending, reporter.loop).add_done_callback(_quiet)
        except RuntimeError:  # the loop is closing: the call is over anyway
            sending.close()
    return True


def _quiet(future: Any) -> None:
    """Progress is advisory: a client that left must not turn it into an error."""
    if not future.cancelled():
        future.exception()
