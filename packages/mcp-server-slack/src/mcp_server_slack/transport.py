"""slack-sdk's sync client, bounded: one retry at most, never of a write, failures in the family's words.

Imported on the first Slack call, not at start: slack-sdk costs about 20 ms to import, and a server that only
answers `initialize` and `tools/list` never needs it (a command imports it while it opens its toolsets, spec.py).
`api.SlackApi` is the only caller.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Collection
from typing import Any
from urllib.error import URLError

from mcp_server_core import Unavailable
from mcp_server_core.operations.metrics import record_rate_limit_wait
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from mcp_server_slack.failures import WRITES, cut_short, failure_of, retry_after_of
from mcp_server_slack.settings import SlackSettings

__all__ = ["BoundedRateLimitRetry", "send", "web_client"]

logger = logging.getLogger(__name__)


class BoundedRateLimitRetry(RateLimitErrorRetryHandler):
    """slack-sdk's 429 handler (one retry after Retry-After), only when the wait fits the budget.

    A longer Retry-After is not slept through: a tool call that hangs for a minute is worse than an error that
    says when to come back.
    """

    def __init__(self, max_wait_s: float) -> None:
        super().__init__(max_retry_count=1)
        self.max_wait_s = max_wait_s

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        return retry_after_of(response.headers) <= self.max_wait_s

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        started = time.monotonic()
        try:
            super().prepare_for_next_attempt(state=state, request=request, response=response, error=error)
        finally:  # the Retry-After slept through, on mcp_rate_limit_wait_seconds_total
            record_rate_limit_wait("slack", time.monotonic() - started)


class _ReadsOnly(RetryHandler):
    """A slack-sdk retry handler that never retries a write.

    A 500 or a dropped connection on chat.postMessage may come after the message was posted: retrying it unasked
    can post it twice. A write's failure tells the model to read the channel before it tries again (failures.py).
    """

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        method = request.url.rstrip("/").rsplit("/", 1)[-1]  # the Web API method is the URL's last segment
        if method in WRITES:
            return False
        return super()._can_retry(state=state, request=request, response=response, error=error)


class ReadRetryOnServerError(_ReadsOnly, ServerErrorRetryHandler):
    """slack-sdk's one retry after a 500/503, for reads only."""


class ReadRetryOnConnectionError(_ReadsOnly, ConnectionErrorRetryHandler):
    """slack-sdk's one retry after a dropped connection, for reads only."""


def web_client(settings: SlackSettings, token: str) -> WebClient:
    return WebClient(
        token=token,
        base_url=settings.api_url,
        # Annotated int, but handed to urlopen as is: a float keeps 0.5 or 2.5 s what they say.
        timeout=settings.timeout_s,  # type: ignore[arg-type]
        retry_handlers=[
            BoundedRateLimitRetry(settings.max_retry_wait_s),
            # One more try of a read, after slack-sdk's short backoff, for a dropped connection or a 500/503;
            # never of a write, which may have been done before the failure.
            ReadRetryOnConnectionError(max_retry_count=1),
            ReadRetryOnServerError(max_retry_count=1),
        ],
        logger=logging.getLogger("mcp_server_slack.sdk"),
    )


def send(
    client: WebClient, method: str, args: dict[str, Any], *, json_body: bool, tolerate: Collection[str]
) -> dict[str, Any]:
    """The data of a successful call, or of an `ok: false` in `tolerate`; a ToolFailure for any other outcome."""
    return send_for_headers(client, method, args, json_body=json_body, tolerate=tolerate)[0]


def send_for_headers(
    client: WebClient, method: str, args: dict[str, Any], *, json_body: bool, tolerate: Collection[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`send`, with the answer's headers (auth.test's X-OAuth-Scopes)."""
    try:
        response = client.api_call(method, json=args) if json_body else client.api_call(method, params=args)
    except SlackApiError as exc:
        data = exc.response.data if isinstance(exc.response.data, dict) else {}
        if data.get("error") in tolerate:
            return dict(data), dict(exc.response.headers or {})
        status = int(getattr(exc.response, "status_code", 200) or 200)
        raise failure_of(method, status=status, headers=exc.response.headers, data=data) from None
    except SlackClientError as exc:
        raise Unavailable(f"Slack call {method} failed: {type(exc).__name__}.") from None
    except OSError as exc:  # URLError, timeouts, refused connections
        raise _network_failure(client, method, exc) from None
    except json.JSONDecodeError:
        # JSON cut short: with retry handlers, slack-sdk parses a 200 body starting with "{" and lets the error out.
        raise cut_short(method) from None
    if not isinstance(response.data, dict):
        raise Unavailable(f"Slack answered {method} with something that is not JSON.")
    if response.data.get("warning"):
        # Done, but not as Slack would have it asked (a deprecation, a charset): for whoever runs the server.
        logger.warning(
            "Slack warned on %s: %s (docs.slack.dev/reference/methods/%s lists its warnings)",
            method,
            response.data["warning"],
            method,
        )
    return response.data, dict(response.headers or {})


def _network_failure(client: WebClient, method: str, exc: OSError) -> Unavailable:
    reason = getattr(exc, "reason", None) or exc
    # urllib wraps in URLError what fails while connecting or sending; what fails once the request is out
    # (a dropped connection, no answer in time) comes bare, and Slack may have done the call by then.
    if method in WRITES and not isinstance(exc, URLError):
        lost = (
            f"no answer came within {client.timeout:g} s"
            if isinstance(exc, TimeoutError)
            else f"the connection dropped before the answer ({type(exc).__name__})"
        )
        return Unavailable(
            f"Slack received {method} but {lost}; it may have been done.",
            hint="Read the channel (read_messages) to see whether it took effect before you retry.",
        )
    if isinstance(reason, TimeoutError):  # a read that stalled, or a connect that never completed
        return Unavailable(
            f"Slack at {client.base_url} did not answer within {client.timeout:g} s ({method}).",
            hint="Retry shortly.",
        )
    return Unavailable(
        f"Slack is unreachable at {client.base_url} ({type(exc).__name__}: {reason}).",
        hint="Check the network or SLACK_API_URL, then retry.",
    )
