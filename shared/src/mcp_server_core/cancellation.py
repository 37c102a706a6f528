"""Abandoned work is stopped, not left running: the helpers' side of cancelling what a tool waits on.

fastmcp runs a sync tool in a worker thread, and a thread cannot be cancelled: when a call passes its deadline,
its client cancels it, or the server stops, the helpers answer at once (server.py), but the thread would go on
holding a database connection, a worker slot and the database's own time. So domain code says, around the
blocking part, how to stop it:

    with cancel_on_abandon(raw_connection.cancel):   # PostgreSQL; SQLite: interrupt(); MariaDB: KILL QUERY
        rows = cursor.fetchmany(100)

and the helpers call that once if they abandon the call while the block runs. The callback runs on a short-lived
thread of its own (cancelling may need a network round trip), must be safe to call from any thread, and may
find the work already done.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["Abandonment", "cancel_on_abandon"]

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


def _run_aside(callback: Callable[[], None]) -> None:
    def run() -> None:
        try:
            callback()
        except Exception:
            logger.warning("cancelling abandoned work failed", exc_info=True)

    threading.Thread(target=run, name="cancel-abandoned", daemon=True).start()
