"""PyGithub's requester, bounded: one retry at most, a 301 handed back, network failures in the family's words.

Imported on the first request, not at start: PyGithub, requests and urllib3 (and the PyJWT and cryptography
PyGithub's app auth pulls in) cost more to import than the rest of the server, and a server that only answers
`initialize` and `tools/list` never needs them. `client.GitHubApi` is the only caller.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any
from urllib.parse import SplitResult

import github
import requests
from github.Requester import HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass, RequestsResponse
from mcp_server_core import Unavailable
from mcp_server_core.operations.metrics import record_rate_limit_wait
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError, ReadTimeoutError, ResponseError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from mcp_server_github.settings import GitHubSettings

_RETRY_STATUSES = frozenset({500, 502, 503, 504})


def rate_limit_wait(headers: Mapping[str, Any]) -> float | None:
    """Seconds GitHub asks us to wait, or None when the response is no rate limit (as GitHub documents it)."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    retry_after = lowered.get("retry-after", "").strip()
    if retry_after.isdigit():
        return float(retry_after)
    if lowered.get("x-ratelimit-remaining") == "0":
        reset = lowered.get("x-ratelimit-reset", "")
        if reset.isdigit():
            return max(int(reset) - time.time(), 0.0) + 1.0
        return 60.0
    return None


class BoundedRetry(Retry):
    """At most one retry, and only when it is cheap: never a loop, never a long sleep.

    - a rate limit (403/429) whose wait (Retry-After, or X-RateLimit-Reset when the primary limit is used up)
      is at most `max_wait` seconds is retried once after that wait; a longer one is returned at once, so the
      model hears when to come back instead of the call hanging;
    - a 5xx on GET, or a GET whose connection dropped before its answer, is retried once; writes are not, since
      GitHub may have applied them; nor is an answer that did not come in time, which would double the wait.
    """

    _READS = frozenset({"GET", "HEAD"})

    def __init__(self, max_wait: float = 5.0, **kwargs: Any) -> None:
        self.max_wait = max_wait
        kwargs.setdefault("total", 1)
        kwargs.setdefault("raise_on_status", False)
        kwargs.setdefault("backoff_factor", 0.5)
        kwargs.setdefault("allowed_methods", None)  # statuses: is_retry() decides per method
        # A read error (a dropped connection) may follow a write GitHub applied: only a GET or HEAD is resent.
        kwargs.setdefault("read", 1)
        super().__init__(**kwargs)

    def _is_method_retryable(self, method: str) -> bool:
        return method.upper() in self._READS

    def new(self, **kwargs: Any) -> BoundedRetry:
        retry = super().new(**kwargs)
        retry.max_wait = self.max_wait
        return retry

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if status_code in (403, 429):
            return True  # increment() decides from the headers whether it is a short rate limit
        return method.upper() in self._READS and status_code in _RETRY_STATUSES

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> BoundedRetry:
        if response is not None and response.status in (403, 429):
            wait = rate_limit_wait(response.headers)
            if wait is None or wait > self.max_wait:
                # Not a rate limit (a permission 403), or too long to wait: hand the response back as it is.
                raise MaxRetryError(_pool, url or "", ResponseError(f"{response.status}, not retried"))  # type: ignore[arg-type]
        if isinstance(error, ReadTimeoutError):
            raise MaxRetryError(_pool, url or "", error) from error  # type: ignore[arg-type]
        return super().increment(method, url, response, error, _pool, _stacktrace)

    def sleep(self, response: Any = None) -> None:
        if response is not None and response.status in (403, 429):
            wait = rate_limit_wait(response.headers)
            if wait:
                waited = min(wait, self.max_wait)
                record_rate_limit_wait("github", waited)  # mcp_rate_limit_wait_seconds_total on /metrics
                time.sleep(waited)
            return
        super().sleep(response)


class _Moved(Exception):
    """A 301, carried past PyGithub: it would follow one itself, to the new path without the query string."""

    def __init__(self, status: int, headers: dict[str, Any], text: str) -> None:
        super().__init__(status)
        self.status, self.headers, self.text = status, headers, text


def _stop_at_301(response: RequestsResponse) -> RequestsResponse:
    if response.status == 301:
        raise _Moved(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    return response


class _HttpConnection(HTTPRequestsConnectionClass):
    """PyGithub's connection, except that a 301 comes back to `GitHubApi.request`, which follows it whole."""

    def getresponse(self) -> RequestsResponse:
        return _stop_at_301(super().getresponse())


class _HttpsConnection(HTTPSRequestsConnectionClass):
    """PyGithub's connection, except that a 301 comes back to `GitHubApi.request`, which follows it whole."""

    def getresponse(self) -> RequestsResponse:
        return _stop_at_301(super().getresponse())


class Transport:
    """PyGithub's client with one connection per thread (a connection holds one request at a time)."""

    def __init__(self, settings: GitHubSettings, api_url: str, origin: SplitResult, token: str | None) -> None:
        self._authorization = f"token {token}" if token else None
        self.api_url = api_url
        self.timeout_s = settings.timeout_s
        self._origin = origin
        # Built now, connected on first use.
        self.github = github.Github(
            base_url=api_url,
            auth=github.Auth.Token(token) if token else None,
            timeout=settings.timeout_s,
            retry=BoundedRetry(max_wait=settings.rate_limit_wait_s),
            seconds_between_requests=settings.request_interval_s or None,
            seconds_between_writes=settings.write_interval_s or None,
            lazy=True,
        )
        self._connections = threading.local()
        self._opened: list[HTTPRequestsConnectionClass | HTTPSRequestsConnectionClass] = []

    def close(self) -> None:
        self.github.close()
        for connection in self._opened:
            connection.close()

    def _connection(self) -> HTTPRequestsConnectionClass | HTTPSRequestsConnectionClass:
        connection: HTTPRequestsConnectionClass | HTTPSRequestsConnectionClass | None = getattr(
            self._connections, "connection", None
        )
        if connection is None:
            kind = _HttpsConnection if self._origin.scheme == "https" else _HttpConnection
            options = self.github.requester.kwargs
            connection = kind(
                self._origin.hostname or "",
                self._origin.port,
                timeout=options["timeout"],
                retry=options["retry"],
                pool_size=options["pool_size"],
                verify=options["verify"],
            )
            self._connections.connection = connection
            self._opened.append(connection)
        return connection

    def send(
        self, verb: str, path: str, query: dict[str, Any], headers: dict[str, str], body: Any, *, what: str
    ) -> tuple[int, dict[str, Any], str]:
        """GitHub's status, headers and text; a 301 among them, for the caller to follow whole."""
        try:
            return self.github.requester.requestJson(verb, path, query, headers, body, cnx=self._connection())
        except _Moved as moved:
            return moved.status, moved.headers, moved.text
        except requests.RequestException as exc:
            if verb != "GET" and _answer_lost(exc):
                # GitHub had the whole request and may have done it; BoundedRetry(read=0) does not send it
                # again, and "retry" here would have the model do it twice (a second issue, a second comment).
                lost = (
                    f"GitHub did not answer {what} within {self.timeout_s} s"
                    if _timed_out(exc)
                    else f"The connection dropped before GitHub answered {what}"
                )
                raise Unavailable(
                    f"{lost}; it may have been done.",
                    hint="Read it back (the issue, comment, pull request, branch or file) to see whether it took "
                    "effect before you retry.",
                ) from None
            if _timed_out(exc):
                raise Unavailable(
                    f"GitHub at {self.api_url} did not answer within {self.timeout_s} s.", hint="Retry shortly."
                ) from None
            raise Unavailable(
                f"Cannot reach GitHub at {self.api_url} ({type(exc).__name__}).",
                hint="Check the network or GITHUB_API_URL, then retry.",
            ) from None

    @contextmanager
    def stream(
        self, path: str, query: dict[str, Any], headers: dict[str, str], *, what: str
    ) -> Iterator[tuple[int, dict[str, Any], Iterator[bytes]]]:
        """A GET whose answer is read in chunks as the caller asks for them, never whole: leaving the block early
        drops the connection with the rest unread. PyGithub reads every answer whole (its connections ignore
        `stream`), so a 50 MiB file was held to show 14 KB of it; this goes through the same session and retry."""
        session: requests.Session = self._connection().session
        sent = {"User-Agent": "mcp-server-github", **headers}
        if self._authorization:
            sent["Authorization"] = self._authorization
        try:
            response = session.get(
                self.api_url + path,
                params=query,
                headers=sent,
                stream=True,
                timeout=self.timeout_s,
                allow_redirects=False,
            )
        except requests.RequestException as exc:
            raise Unavailable(
                f"Cannot read {what} from GitHub at {self.api_url} ({type(exc).__name__}).", hint="Retry shortly."
            ) from None
        try:
            answer = {k.lower(): v for k, v in response.headers.items()}
            yield response.status_code, answer, _chunks(response, what)
        finally:
            response.close()


def _chunks(response: requests.Response, what: str) -> Iterator[bytes]:
    """The answer's body in chunks; a connection that drops or stalls half-way is said in the family's words."""
    try:
        yield from response.iter_content(chunk_size=64 * 1024)
    except requests.RequestException as exc:
        raise Unavailable(f"GitHub stopped sending {what} half-way ({type(exc).__name__}).", hint="Retry.") from None


def _answer_lost(exc: requests.RequestException) -> bool:
    """Whether the request failed after it went out (waiting for or reading the answer), not while connecting."""
    if isinstance(exc, requests.ReadTimeout):
        return True
    cause = exc.args[0] if exc.args else None
    cause = getattr(cause, "reason", cause)  # MaxRetryError holds the last attempt's error
    return isinstance(cause, ReadTimeoutError | ProtocolError)


def _timed_out(exc: requests.RequestException) -> bool:
    """Whether GitHub took too long to answer, however requests words it.

    requests turns a connect timeout into `Timeout` but not a read timeout: with `BoundedRetry(read=0)` an
    answer that never comes arrives as `ConnectionError(MaxRetryError(ReadTimeoutError))`, and a body that stalls
    after its headers as `ConnectionError(ReadTimeoutError)`. Read by type alone, a stalled GitHub was reported
    as unreachable (issue 7). urllib3 derives `NewConnectionError` (refused, reset) from its timeout type for
    old callers' sake; requests skips it the same way.
    """
    cause = exc.args[0] if exc.args else None
    cause = getattr(cause, "reason", cause)  # MaxRetryError holds the last attempt's error
    stalled = isinstance(cause, Urllib3Timeout) and not isinstance(cause, NewConnectionError)
    return isinstance(exc, requests.Timeout) or stalled
