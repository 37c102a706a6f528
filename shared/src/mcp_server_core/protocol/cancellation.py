"""Abandoned work is stopped, not left running: the helpers' side of cancelling what a tool waits on.

fastmcp runs a sync tool in a worker thread, and a thread cannot be cancelled: when a call passes its deadline,
its client cancels it, or the server stops, the helpers answer at once (server.py), but the thread would go on
holding a database connection, a worker slot and the database's own time. So domain code says, around the
blocking part, how to stop it:

    with cancel_on_abandon(raw_connection.cancel):   # PostgreSQL; SQLite: interrupt(); MariaDB: KILL QUERY
        rows = cursor.fetchmany(100)

and the helpers call that once if they abandon the call while the block runs. The callback runs on a short-lived
thread of its own (cancelling may need a network round trip), must be safe to call from any thread, and may
find the work already done. A server that stops waits a moment for those threads (`finish_cancelling`): the
calls in flight are abandoned as it stops, and a cancel still on its way when the process exits never arrives,
leaving the database to run the query on.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["Abandonment", "cancel_on_abandon", "finish_cancelling"]

logger = logging.getLogger(__name__)


class Abandonment:
    """The cancel callbacks of one call's blocks in progress; `abandon()` runs each once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.abandoned = False

    def add(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self.abandoned:
                self._callbacks.append(callback)
                return
        _run_aside(callback)  # abandoned before the block began: stop it as soon as it starts

    def remove(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def abandon(self) -> None:
        with self._lock:
            if self.abandoned:
                return
            self.abandoned = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _run_aside(callback)


_current: ContextVar[Abandonment | None] = ContextVar("mcp_server_core_abandonment", default=None)


def current_abandonment() -> Abandonment | None:
    return _current.get()


def watch_call() -> tuple[Abandonment, object]:
    """For the helpers: a fresh Abandonment for the call about to run in this context; returns it and the token."""
    abandonment = Abandonment()
    return abandonment, _current.set(abandonment)


def unwatch_call(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]


@contextlib.contextmanager
def cancel_on_abandon(cancel: Callable[[], None]) -> Iterator[None]:
    """While the block runs, `cancel()` is called once if the helpers abandon the call (see the module docstring).

    Outside a call the helpers watch (a background job, a test), it is a no-op.
    """
    abandonment = _current.get()
    if abandonment is None:
        yield
        return
    abandonment.add(cancel)
    try:
        yield
    finally:
        abandonment.remove(cancel)


_cancelling: set[threading.Thread] = set()
_cancelling_lock = threading.Lock()


def finish_cancelling(timeout: float) -> None:
    """Wait up to `timeout` seconds for the cancels under way to be delivered; the helpers call it as the server
    stops. Daemon threads, they would otherwise die with the process, their cancel unsent."""
    deadline = time.monotonic() + timeout
    with _cancelling_lock:
        under_way = list(_cancelling)
    for thread in under_way:
        thread.join(max(deadline - time.monotonic(), 0))


def _run_aside(callback: Callable[[], None]) -> None:
    def run() -> None:
        try:
            callback()
        except Exception:
            logger.warning("cancelling abandoned work failed", exc_info=True)
        finally:
            with _cancelling_lock:
                _cancelling.discard(thread)

    # Daemon: a cancel that hangs (an unreachable database) must not hold the process's exit for ever.
    thread = threading.Thread(target=run, name="cancel-abandoned", daemon=True)
    with _cancelling_lock:
        _cancelling.add(thread)
    thread.start()
