"""Prometheus metrics on the HTTP transport: `GET /metrics`, authenticated like the MCP endpoint.

What is counted (prometheus-client, text format 0.0.4):
- `mcp_requests_total{method, name, outcome}`: tools/call, resources/read and prompts/get by tool or prompt name
  (a resource by its URI scheme, so file paths never become label values; a name nothing answered to is `other`,
  so a client cannot make up series) and the audit trail's outcome class;
- `mcp_request_duration_seconds{method}`: a latency histogram;
- `mcp_requests_in_flight{method}`: calls being answered now;
- `mcp_upstream_failures_total{category}`: isError results whose cause was upstream (unavailable, rate_limited);
- `mcp_rate_limit_wait_seconds_total{upstream}`: time spent waiting out an upstream's Retry-After;
- `mcp_auth_failures_total{reason}`: requests refused at the HTTP front, by reason;
- `mcp_principal_calls_total{principal, outcome}`: tools/call by caller, as the audit line names them (a token's
  fingerprint and, where known, the account: `token-sha256:…/github:alice`); the first `MAX_NAMES` callers of a
  process are label values, later ones `other`, so callers cannot grow the series without bound;
- `mcp_cross_write_confirmations_total{outcome}`: cross writes put to their user (protocol/flows.py): accepted,
  declined, cancelled, timed_out, or refused_no_elicitation (a client that cannot be asked);
- `mcp_audit_dropped_total`: audit lines dropped because their destination fell behind (audit.py).

The outcome is the one the audit trail computes (one SDK middleware observes each call once for both). With
`--workers N`, prometheus-client's multiprocess mode aggregates every worker: the parent names a fresh folder in
`PROMETHEUS_MULTIPROC_DIR` before forking (the library reads it at import, which is why nothing here imports it
earlier), each worker writes its own files there, and whichever worker answers /metrics sums them all. A worker
that dies is marked dead so its in-flight gauge stops counting.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = [
    "CallMetrics",
    "add_metrics_route",
    "call_metrics",
    "prepare_for_workers",
    "record_audit_dropped",
    "record_auth_failure",
    "record_cross_write_confirmation",
    "record_rate_limit_wait",
    "remove_folder",
    "worker_died",
]

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
_UPSTREAM = {"unavailable", "rate_limited"}
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class CallMetrics:
    """The family's metrics in one registry (per process; summed across workers by `/metrics`)."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.requests = Counter("mcp_requests", "Requests answered", ["method", "name", "outcome"])
        self.duration = Histogram(
            "mcp_request_duration_seconds", "Time to answer", ["method"], buckets=_LATENCY_BUCKETS
        )
        self.in_flight = Gauge(
            "mcp_requests_in_flight", "Requests being answered", ["method"], multiprocess_mode="livesum"
        )
        self.upstream_failures = Counter("mcp_upstream_failures", "Calls failed by an upstream", ["category"])
        self.rate_limit_wait = Counter(
            "mcp_rate_limit_wait_seconds", "Seconds spent waiting out upstream rate limits", ["upstream"]
        )
        self.auth_failures = Counter("mcp_auth_failures", "Requests refused at the HTTP front", ["reason"])
        self.principal_calls = Counter(
            "mcp_principal_calls", "Tool calls answered, by caller", ["principal", "outcome"]
        )
        self.cross_write_confirmations = Counter(
            "mcp_cross_write_confirmations", "Cross writes put to their user, by how it ended", ["outcome"]
        )
        self.audit_dropped = Counter("mcp_audit_dropped", "Audit lines dropped because their destination fell behind")
        self._names = _LabelNames()

    def started(self, method: str) -> None:
        self.in_flight.labels(method).inc()

    def finished(
        self, method: str, subject: str, outcome: str, category: str | None, seconds: float, principal: str = ""
    ) -> None:
        self.in_flight.labels(method).dec()
        if principal and method == "tools/call":
            self.principal_calls.labels(self._names.label("principal", principal, "ok"), outcome).inc()
        name = (urlsplit(subject).scheme or "unknown") if method == "resources/read" else subject[:100]
        self.requests.labels(method, self._names.label(method, name, outcome), outcome).inc()
        self.duration.labels(method).observe(seconds)
        if category in _UPSTREAM:
            self.upstream_failures.labels(category).inc()


MAX_NAMES = 200
"""Tool, prompt or URI-scheme label values kept per method; a server has a few dozen."""


class _LabelNames:
    """Which names may be label values: each distinct value is a series the process keeps for ever, and the
    client chooses the name (3,000 made-up tool names grew /metrics from 5 KB to 1 MB). A name enters once a
    call reached what it names (any outcome but a protocol error: an unknown tool, prompt or resource is one),
    and at most `MAX_NAMES` per method; any other is `other`."""

    def __init__(self) -> None:
        self._seen: dict[str, set[str]] = {}

    def label(self, method: str, name: str, outcome: str) -> str:
        seen = self._seen.setdefault(method, set())
        if name in seen:
            return name
        if outcome == "protocol_error" or len(seen) >= MAX_NAMES:
            return "other"
        seen.add(name)
        return name


_metrics: list[CallMetrics] = []


def call_metrics() -> CallMetrics:
    """This process's metrics, made on first use (after any fork, so each worker writes its own files)."""
    if not _metrics:
        _metrics.append(CallMetrics())
    return _metrics[0]


def record_rate_limit_wait(upstream: str, seconds: float) -> None:
    """An upstream client waited `seconds` for a rate limit (GitHub, Slack); counted where metrics are on."""
    if _metrics:
        _metrics[0].rate_limit_wait.labels(upstream).inc(seconds)


def record_audit_dropped(lines: int) -> None:
    if _metrics:
        _metrics[0].audit_dropped.inc(lines)


def record_auth_failure(reason: str) -> None:
    if _metrics:
        _metrics[0].auth_failures.labels(reason).inc()


def record_cross_write_confirmation(outcome: str) -> None:
    """A cross write was put to its user (or could not be): `outcome` is one of the few flows.py names."""
    if _metrics:
        _metrics[0].cross_write_confirmations.labels(outcome).inc()


def prepare_for_workers() -> str | None:
    """In the parent, before forking: a fresh folder for every worker's metric files; returns it to remove."""
    if os.environ.get(MULTIPROCESS_ENV):
        return None  # the operator chose one (and cleans it)
    folder = tempfile.mkdtemp(prefix="mcp-metrics-")
    os.environ[MULTIPROCESS_ENV] = folder
    return folder


def worker_died(pid: int) -> None:
    if os.environ.get(MULTIPROCESS_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]


def remove_folder(folder: str | None) -> None:
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def add_metrics_route(server: FastMCP) -> None:
    """`GET /metrics` on `server`'s HTTP app, asking for the same bearer token as the MCP endpoint."""
    if getattr(server, "_metrics_route", False):
        return
    server._metrics_route = True  # type: ignore[attr-defined]

    @server.custom_route("/metrics", methods=["GET"])
    async def metrics(request: Request) -> Response:
        if server.auth is not None and (refusal := await _refusal(server, request)) is not None:
            return refusal
        return Response(_exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")


async def _refusal(server: FastMCP, request: Request) -> Response | None:
    """None for a token the MCP endpoint would serve (verified, and holding the scopes it requires)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    verifier: Any = server.auth
    accepted = await verifier.verify_token(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
    if accepted is None:
        return Response(
            "401 Unauthorized: /metrics takes the MCP endpoint's bearer token\n",
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            media_type="text/plain",
        )
    # The verifiers leave the scopes to the endpoint (auth.py): checked here as the endpoint checks them.
    missing = [scope for scope in getattr(verifier, "required_scopes", None) or [] if scope not in accepted.scopes]
    if missing:
        return Response(
            f"403 Forbidden: /metrics takes the MCP endpoint's scopes: {' '.join(missing)}\n",
            status_code=403,
            headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{" ".join(missing)}"'},
            media_type="text/plain",
        )
    return None


def _exposition() -> bytes:
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest

    if os.environ.get(MULTIPROCESS_ENV):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest(REGISTRY)
