"""Health endpoints for load balancers and orchestrators, beside the MCP endpoint on the HTTP transport.

- `GET /healthz`: the process serves HTTP (liveness). Always 200 while it runs.
- `GET /readyz`: the server can do its work: its upstream answered its readiness check (a database ping, the
  GitHub or Slack token accepted). 200 or 503. Details that do not stop the work ride along: with `--state-url`,
  `"state": "redis"`, or `"degraded: ..."` while the shared state store is away (this host serves from memory).
  The verdict is cached for `READY_TTL_S`, so a load balancer polling every second costs the upstream one check
  in five seconds, and a check gets `CHECK_TIMEOUT_S`.

Both answer without a bearer token (a load balancer has none) and say nothing an anonymous caller should not
learn: the failure's detail goes to the server log, the answer names only the kind of upstream that failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp_server_core.conventions.errors import redact

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = ["CHECK_TIMEOUT_S", "READY_TTL_S", "Readiness", "add_health_routes"]

logger = logging.getLogger(__name__)

READY_TTL_S = 5.0
CHECK_TIMEOUT_S = 3.0
_HEADERS = {"Cache-Control": "no-store"}


class Readiness:
    """A server's readiness check (sync, raises when not ready), run in a thread and cached briefly."""

    def __init__(self) -> None:
        self.check: Callable[[], object] | None = None
        self.upstream = "upstream"
        self._verdict: tuple[float, bool] | None = None
        self._lock = anyio.Lock()
        self.details: dict[str, Callable[[], Awaitable[str]]] = {}
        """Named details /readyz reports beside its verdict (each answers within its own bound, never hangs)."""

    def set(self, check: Callable[[], object], *, upstream: str) -> None:
        """`check()` raises if `upstream` (words an anonymous caller may read: "the database", "GitHub") is not
        usable now."""
        self.check, self.upstream, self._verdict = check, upstream, None

    async def ready(self) -> bool:
        if self.check is None:
            return True
        async with self._lock:  # one check at a time, however many probes arrive
            if self._verdict is not None and time.monotonic() - self._verdict[0] < READY_TTL_S:
                return self._verdict[1]
            ok = await self._run(self.check)
            self._verdict = (time.monotonic(), ok)
            return ok

    async def _run(self, check: Callable[[], object]) -> bool:
        try:
            with anyio.fail_after(CHECK_TIMEOUT_S):
                # abandon_on_cancel: a check stuck on a dead upstream must not hold the probe past its timeout.
                await anyio.to_thread.run_sync(check, abandon_on_cancel=True)
        except TimeoutError:
            logger.warning("readiness: %s did not answer within %g s", self.upstream, CHECK_TIMEOUT_S)
            return False
        except Exception as exc:
            logger.warning("readiness: %s is not usable: %s", self.upstream, redact(str(exc))[:300])
            return False
        return True


def add_health_routes(server: FastMCP, readiness: Readiness) -> None:
    """Register /healthz and /readyz on `server`'s HTTP app (once); /readyz asks `readiness`."""
    if getattr(server, "_health_routes", False):
        return
    server._health_routes = True  # type: ignore[attr-defined]

    @server.custom_route("/healthz", methods=["GET"])
    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"}, headers=_HEADERS)

    @server.custom_route("/readyz", methods=["GET"])
    async def readyz(_request: Request) -> JSONResponse:
        details = {name: await detail() for name, detail in readiness.details.items()}
        if await readiness.ready():
            return JSONResponse({"status": "ready", **details}, headers=_HEADERS)
        return JSONResponse(
            {"status": "unavailable", "reason": f"{readiness.upstream} is not usable now", **details},
            status_code=503,
            headers={**_HEADERS, "Retry-After": str(int(READY_TTL_S))},
        )
