"""One door to the Slack Web API: which token, a count of calls, a span per request, errors that say what to do.

Every Slack call of the server goes through `SlackApi.call`, which picks the token (the user token where Slack
demands one), counts calls, traces each request, and hands it to `transport`, where slack-sdk turns `ok: false`,
HTTP 429, non-JSON answers and network failures into the helpers' failure types (failures.py holds what each
Slack error code means). Tokens never appear in a message: the helpers redact every registered secret, and none
is put there.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from mcp_server_core import Refused, upstream_span
from mcp_server_core.operations.audit import audit_target

from mcp_server_slack.failures import WRITES, MissingScope, retry_after_of
from mcp_server_slack.settings import SlackSettings

if TYPE_CHECKING:
    from slack_sdk import WebClient

__all__ = ["MissingScope", "SlackApi", "retry_after_of"]

# Methods Slack serves only to a user token (a bot token gets not_allowed_token_type).
USER_TOKEN_METHODS = frozenset({"search.messages", "search.all", "search.files"})


class SlackApi:
    """The Slack Web API as this server uses it; safe to call from several worker threads."""

    def __init__(self, settings: SlackSettings) -> None:
        self.settings = settings
        self.per_caller = settings.upstream_identity != "single"
        """Each HTTP caller's own user token carries their calls (docs/identity.md); else the configured ones."""
        self._callers: OrderedDict[bytes, WebClient] = OrderedDict()
        self.has_user_token = settings.user_token is not None
        self.has_bot_token = settings.bot_token is not None
        tokens = (("bot", settings.bot_token), ("user", settings.user_token))
        self._tokens = {kind: secret for kind, secret in tokens if secret is not None}
        # Built at the first call of each kind: the server starts without slack-sdk imported (transport.py).
        self._clients: dict[str, WebClient] = {}
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        """Web API calls made so far, by method: what the benchmark and the tests read."""

    @property
    def configured(self) -> bool:
        return bool(self._tokens)

    def client(self, kind: str) -> WebClient:
        """slack-sdk's client for the `bot` or `user` token, built on first use."""
        with self._lock:
            if kind not in self._clients:
                from mcp_server_slack.transport import web_client

                self._clients[kind] = web_client(self.settings, self._tokens[kind].get_secret_value())
            return self._clients[kind]

    def caller_client(self, token: str) -> WebClient:
        """slack-sdk's client for one caller's token, at most `identity_cache_size` of them kept."""
        key = hashlib.sha256(token.encode()).digest()
        with self._lock:
            client = self._callers.get(key)
            if client is None:
                from mcp_server_slack.transport import web_client

                client = self._callers[key] = web_client(self.settings, token)
                while len(self._callers) > self.settings.identity_cache_size:
                    self._callers.popitem(last=False)
            self._callers.move_to_end(key)
            return client

    def _client_for(self, method: str) -> WebClient:
        if not self.per_caller:
            return self.client(self.token_kind(method))
        from mcp_server_core.auth.upstream import caller_upstream_token

        token = caller_upstream_token("slack")
        if token is None:
            raise Refused(
                "This server acts on Slack only as each caller, and this request carries no caller's Slack token.",
                hint="Connect over HTTP with your Slack user token (xoxp-) as the bearer (docs/identity.md).",
            )
        return self.caller_client(token)

    def test_token(self, token: str, *, tolerate: Collection[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """auth.test with `token` (the data and the headers), counted and traced like any call."""
        from mcp_server_slack.transport import send_for_headers

        with self._lock:
            self.calls["auth.test"] += 1
        with upstream_span("slack", "auth.test"):
            return send_for_headers(self.caller_client(token), "auth.test", {}, json_body=False, tolerate=tolerate)

    def check_ready(self) -> None:
        """Readiness: Slack answers and accepts the configured token; serving each caller as themselves, with no
        token of its own, it asks auth.test without one (Slack answers not_authed: reachable)."""
        if self.per_caller:
            self.test_token("", tolerate=("not_authed", "invalid_auth"))
            return
        self.call("auth.test")

    def token_kind(self, method: str) -> str:
        if method in USER_TOKEN_METHODS:
            if "user" not in self._tokens:
                raise Refused(
                    f"{method} needs a user token (xoxp-), and only a bot token is configured.",
                    hint="Set SLACK_USER_TOKEN to a user token with the search:read scope and restart the server; "
                    "meanwhile read_messages on a channel finds recent messages.",
                )
            return "user"
        if not self._tokens:
            raise Refused(
                "No Slack token is configured.",
                hint="Set SLACK_BOT_TOKEN (xoxb-) or SLACK_USER_TOKEN (xoxp-), or --token-file, and restart.",
            )
        return "bot" if "bot" in self._tokens else "user"

    def call(
        self, method: str, *, json_body: bool = False, tolerate: Collection[str] = (), **params: Any
    ) -> dict[str, Any]:
        """The data of a successful call; a ToolFailure saying what to do for any other outcome.

        An `ok: false` whose error code is in `tolerate` is returned as data instead (already_reacted, say).
        """
        from mcp_server_slack.transport import send

        client = self._client_for(method)
        args = {key: value for key, value in params.items() if value is not None}
        if method in WRITES and args.get("channel"):
            audit_target(f"slack:{args['channel']}")  # what a write changes, in its call's audit line
        with self._lock:
            self.calls[method] += 1
        # The span is named by the method alone: argument values (channel IDs, search words) stay out of traces.
        with upstream_span("slack", method):
            return send(client, method, args, json_body=json_body, tolerate=tolerate)
