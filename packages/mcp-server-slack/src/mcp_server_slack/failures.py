"""What each Slack error code means for the model that called a tool: a failure type, a sentence, a next step.

Slack answers most failures with HTTP 200 and `{"ok": false, "error": "<code>"}`; each method's page lists its
codes, and a set of common codes can come from any method. `ERRORS` holds every documented code of the methods
this server calls, so no code falls through to a guess: retrying is suggested only where it can help (Slack's
own outage, a rate limit), and a code that can only mean a malformed request says it is this server's bug.

An answer that is not JSON (an HTML 503 from a proxy or Slack's edge) is summarised by its status, never quoted:
markup in an error is noise to a model, and a page can carry anything. Slack's own explanation of a refusal
(`response_metadata.messages`, beside `error`) is passed on as one bounded line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp_server_core import InvalidArgument, NotFound, RateLimited, Refused, ToolFailure, Unavailable
from mcp_server_core.conventions.untrusted import strip_invisible

__all__ = ["ERRORS", "WRITES", "Meaning", "MissingScope", "failure_of", "retry_after_of"]

logger = logging.getLogger(__name__)

WRITES = frozenset({"chat.postMessage", "chat.update", "chat.delete", "reactions.add", "reactions.remove"})

SAYS_MAX = 300
"""Characters of Slack's own explanation (`response_metadata.messages`) a failure passes on."""

DEFAULT_RATE_LIMIT_WAIT_S = 30.0
"""What to tell the model when Slack rate-limits without a Retry-After (chat.postMessage's own rate_limited)."""


class MissingScope(Refused):
    """Slack's missing_scope: the token lacks `needed`."""

    def __init__(self, message: str, *, needed: str, hint: str | None = None) -> None:
        self.needed = needed
        super().__init__(message, hint=hint)


def retry_after_of(headers: Any, default: float = 1.0) -> float:
    """Seconds from a Retry-After header (slack-sdk hands headers over as str or [str] values)."""
    for key, value in dict(headers or {}).items():
        if str(key).lower() == "retry-after":
            raw = value[0] if isinstance(value, list | tuple) else value
            try:
                return max(float(raw), 0.0)
            except (TypeError, ValueError):
                return default
    return default


@dataclass(frozen=True)
class Meaning:
    """A code's failure type, its sentence (`{method}` and `{code}` filled in) and what to do about it."""

    failure: type[ToolFailure]
    says: str
    hint: str | None = None


_TOKEN = Meaning(
    Refused,
    "Slack rejected the token ({code}) on {method}.",
    "Check SLACK_BOT_TOKEN / SLACK_USER_TOKEN: the app may have been uninstalled or the token revoked; "
    "restart the server with a valid token.",
)
_OUTAGE = Meaning(
    Unavailable,
    "Slack failed on its side ({code}) while answering {method}.",
    "Retry in a minute; status.slack.com says whether Slack has an incident.",
)
_WRITE_MAY_HAVE_HAPPENED = Meaning(
    Unavailable,
    "Slack failed on its side ({code}) during {method}; part of it may have been done.",
    "Read the channel (read_messages) to see whether it took effect before you retry.",
)
_MALFORMED = Meaning(
    ToolFailure,
    "Slack could not parse the request this server made for {method} ({code}).",
    "This is a bug in mcp-server-slack, not in the arguments: report it with the method and code.",
)
_NOT_FOUND = "Slack found no such {what} ({{code}}) for {{method}}."
_LIST_CHANNELS = "list_channels shows the channels this token can see; a private one needs the app invited."
_LIST_USERS = "list_users with a query finds people by name or email."
_CHECK_TS = "Check the ts: read_messages shows each message's ts."
_POLICY = "Slack's workspace policy refuses {method} here ({code})."
_ASK_ADMIN = "A workspace admin can change this; otherwise pick another channel."
_FIX_ARGUMENT = "Slack refused the arguments of {method}: {code}."

ERRORS: Mapping[str, Meaning] = {
    # --- any method (Slack's common errors) ---
    "invalid_auth": _TOKEN,
    "not_authed": _TOKEN,
    "account_inactive": _TOKEN,
    "token_revoked": _TOKEN,
    "token_expired": _TOKEN,
    "org_login_required": Meaning(
        Refused,
        "Slack refused {method}: the workspace is moving into an Enterprise organisation ({code}).",
        "Ask a workspace admin when the migration ends, then reinstall the app and restart with the new token.",
    ),
    "two_factor_setup_required": Meaning(
        Refused,
        "Slack refused {method}: the token's user must set up two-factor authentication first ({code}).",
        "Turn on two-factor authentication for that account; the token works once it is set up.",
    ),
    "no_permission": Meaning(
        Refused,
        "The token may not do {method} here ({code}).",
        "Invite the app to the conversation (/invite @your-app), or check the app's permissions at api.slack.com/apps.",
    ),
    "access_denied": Meaning(
        Refused,
        "Slack denied access to what {method} asked for ({code}).",
        "Pick a channel or item this token can see.",
    ),
    "accesslimited": Meaning(
        Refused,
        "Slack limits {method} on the network this server runs on ({code}).",
        "A workspace admin's IP allow-list excludes this host: run the server from an allowed network.",
    ),
    "enterprise_is_restricted": Meaning(
        Refused,
        "{method} cannot be called on an Enterprise Grid organisation with this token ({code}).",
        "Use a token installed on the workspace itself rather than the organisation.",
    ),
    "ekm_access_denied": Meaning(
        Refused,
        "Slack administrators have suspended this for the workspace ({code}, on {method}).",
        "Calling again will not help: ask a workspace admin (Enterprise Key Management revoked access).",
    ),
    "team_added_to_org": Meaning(
        Unavailable,
        "Slack is moving this workspace into an Enterprise organisation ({code}); {method} is unavailable meanwhile.",
        "Retry after the migration; it can take hours.",
    ),
    "deprecated_endpoint": Meaning(
        Refused,
        "Slack no longer serves {method} ({code}).",
        "Upgrade mcp-server-slack to a release that uses its successor.",
    ),
    "method_deprecated": Meaning(
        Refused,
        "Slack no longer serves {method} ({code}).",
        "Upgrade mcp-server-slack to a release that uses its successor.",
    ),
    "missing_scope": Meaning(Refused, "The Slack token lacks a scope that {method} needs."),  # `needed` says which
    "not_allowed_token_type": Meaning(
        Refused,
        "Slack does not accept this kind of token for {method} ({code}).",
        "Search needs a user token: set SLACK_USER_TOKEN (xoxp-, scope search:read) and restart.",
    ),
    "ratelimited": Meaning(RateLimited, "Slack rate-limited {method} ({code})."),
    "internal_error": _OUTAGE,
    "fatal_error": _OUTAGE,
    "service_unavailable": _OUTAGE,
    "request_timeout": Meaning(
        Unavailable,
        "Slack received the request for {method} cut short ({code}).",
        "Retry shortly; a proxy between this server and Slack may be truncating requests.",
    ),
    "invalid_arguments": _MALFORMED,
    "invalid_arg_name": _MALFORMED,
    "invalid_array_arg": _MALFORMED,
    "invalid_charset": _MALFORMED,
    "invalid_form_data": _MALFORMED,
    "invalid_post_type": _MALFORMED,
    "missing_post_type": _MALFORMED,
    "unknown_method": _MALFORMED,
    # --- lookups ---
    "channel_not_found": Meaning(NotFound, _NOT_FOUND.format(what="channel"), _LIST_CHANNELS),
    "user_not_found": Meaning(NotFound, _NOT_FOUND.format(what="user"), _LIST_USERS),
    "users_not_found": Meaning(NotFound, _NOT_FOUND.format(what="user"), _LIST_USERS),
    "user_not_visible": Meaning(
        Refused,
        "That user is not visible to this token ({code}, on {method}).",
        "People of another organisation show only in channels shared with them; list_users lists the rest.",
    ),
    "thread_not_found": Meaning(NotFound, _NOT_FOUND.format(what="thread"), _CHECK_TS),
    "message_not_found": Meaning(NotFound, _NOT_FOUND.format(what="message"), _CHECK_TS),
    "no_item_specified": Meaning(NotFound, _NOT_FOUND.format(what="message"), _CHECK_TS),
    "duplicate_channel_not_found": Meaning(NotFound, _NOT_FOUND.format(what="channel"), _LIST_CHANNELS),
    "duplicate_message_not_found": Meaning(NotFound, _NOT_FOUND.format(what="message"), _CHECK_TS),
    "not_in_channel": Meaning(
        Refused,
        "The app is not a member of that channel, so {method} is refused.",
        "Invite the app there (/invite @your-app) or pick a channel from list_channels with member_only.",
    ),
    "method_not_supported_for_channel_type": Meaning(
        InvalidArgument,
        "{method} does not work on this kind of conversation ({code}).",
        "Pick a channel, private channel or DM from list_channels.",
    ),
    "fetch_members_failed": Meaning(
        Unavailable,
        "Slack could not list the members of that channel ({code}).",
        "Retry in a minute; a very large channel sometimes fails once.",
    ),
    "invalid_cursor": Meaning(
        InvalidArgument,
        "Slack no longer accepts this page's cursor ({code}, on {method}).",
        "Call the tool again without cursor to start from the first page.",
    ),
    "invalid_limit": _MALFORMED,
    "limit_required": _MALFORMED,
    "invalid_types": _MALFORMED,
    "invalid_metadata_filter_keys": _MALFORMED,
    "invalid_ts_latest": Meaning(
        InvalidArgument, _FIX_ARGUMENT, "latest takes a Slack ts, an ISO date or time, or a span like 2h or 7d."
    ),
    "invalid_ts_oldest": Meaning(
        InvalidArgument, _FIX_ARGUMENT, "oldest takes a Slack ts, an ISO date or time, or a span like 2h or 7d."
    ),
    # --- posting ---
    "rate_limited": Meaning(
        RateLimited,
        "Slack refused {method}: the app posted too many messages ({code}; Slack allows about one a second per "
        "channel).",
    ),
    "message_limit_exceeded": Meaning(
        Refused,
        "The workspace has reached its plan's message limit ({code}, on {method}).",
        "Calling again will not help: a workspace admin can lift the limit by changing plan.",
    ),
    "is_archived": Meaning(
        Refused, "The channel is archived; Slack accepts no new messages there.", "Pick an active channel."
    ),
    "channel_is_archived": Meaning(
        Refused, "The channel is archived; Slack accepts no new messages there.", "Pick an active channel."
    ),
    "msg_too_long": Meaning(
        InvalidArgument, _FIX_ARGUMENT, "Shorten the text (Slack keeps at most 40,000 characters)."
    ),
    "no_text": Meaning(InvalidArgument, _FIX_ARGUMENT, "Give the message some text."),
    "too_many_attachments": _MALFORMED,
    "attachment_payload_limit_exceeded": _MALFORMED,
    "too_many_contact_cards": _MALFORMED,
    "invalid_blocks": _MALFORMED,
    "invalid_blocks_format": _MALFORMED,
    "invalid_metadata_format": _MALFORMED,
    "invalid_metadata_schema": _MALFORMED,
    "metadata_too_large": _MALFORMED,
    "metadata_must_be_sent_from_app": _MALFORMED,
    "missing_file_data": _MALFORMED,
    "as_user_not_supported": _MALFORMED,
    "cannot_reply_to_message": Meaning(
        InvalidArgument,
        "Slack does not allow replies to that message ({code}).",
        "Reply to the thread's first message: its ts is the thread_ts of every reply.",
    ),
    "restricted_action": Meaning(Refused, _POLICY, _ASK_ADMIN),
    "restricted_action_read_only_channel": Meaning(
        Refused, "The channel is read-only: only admins may post there ({code}).", _ASK_ADMIN
    ),
    "restricted_action_thread_only_channel": Meaning(
        Refused,
        "The channel takes replies in threads only ({code}).",
        "Use reply_to_thread on an existing message instead.",
    ),
    "restricted_action_non_threadable_channel": Meaning(
        Refused, "The channel takes no thread replies ({code}).", "Use post_message to post to the channel itself."
    ),
    "restricted_action_thread_locked": Meaning(
        Refused, "The thread is locked: Slack accepts no more replies there ({code}).", "Post a new message instead."
    ),
    "posting_to_general_channel_denied": Meaning(Refused, _POLICY, _ASK_ADMIN),
    "cant_post": Meaning(Refused, _POLICY, _ASK_ADMIN),
    "team_access_not_granted": Meaning(
        Refused,
        "The app has not been granted access to the workspace of that channel ({code}, on {method}).",
        "An Enterprise Grid admin must add the app to that workspace; until then pick a channel of this one.",
    ),
    "messages_tab_disabled": Meaning(
        Refused,
        "That app's Messages tab is turned off, so it takes no direct messages ({code}).",
        "Write to the person or channel instead.",
    ),
    "slack_connect_canvas_sharing_blocked": Meaning(
        Refused, "Sharing canvases into this Slack Connect channel is blocked ({code}).", "Post the text without it."
    ),
    "slack_connect_file_link_sharing_blocked": Meaning(
        Refused, "Sharing file links into this Slack Connect channel is blocked ({code}).", "Post the text without it."
    ),
    # --- reactions ---
    "already_reacted": Meaning(
        InvalidArgument, "The message already carries that reaction from this app ({code}).", "Nothing to do."
    ),
    "bad_timestamp": Meaning(InvalidArgument, _FIX_ARGUMENT, _CHECK_TS),
    "invalid_name": Meaning(
        InvalidArgument,
        "Slack knows no emoji of that name ({code}).",
        "Use a standard name such as thumbsup, eyes or white_check_mark, or one of the workspace's custom emoji.",
    ),
    "external_channel_migrating": Meaning(
        Unavailable, "The channel is being migrated between workspaces ({code}).", "Retry once the migration ends."
    ),
    "not_reactable": Meaning(Refused, "That item cannot take reactions ({code}).", "React to a message instead."),
    "thread_locked": Meaning(
        Refused,
        "The thread is locked: Slack accepts no reactions there ({code}).",
        "Calling again will not help: the thread stays locked until someone unlocks it.",
    ),
    "too_many_emoji": Meaning(
        Refused,
        "The message has reached Slack's limit of distinct emoji ({code}).",
        "Add one of the reactions already on it instead (read_messages shows them).",
    ),
    "too_many_reactions": Meaning(
        Refused,
        "The app has reached Slack's limit of reactions one member may add to this message ({code}).",
        "Calling again will not help: this app cannot add more reactions to that message.",
    ),
    "no_access": Meaning(Refused, "The token may not react to this item ({code}).", "React to a message instead."),
}


def _is_json(headers: Any) -> bool:
    for key, value in dict(headers or {}).items():
        if str(key).lower() == "content-type":
            raw = value[0] if isinstance(value, list | tuple) else value
            return "json" in str(raw).lower()
    return True  # slack-sdk leaves the header out of some of its own answers: trust the body then


def _not_json(method: str, status: int) -> ToolFailure:
    if status == 429:
        return RateLimited(f"Slack rate-limited {method} (HTTP 429).", retry_after=DEFAULT_RATE_LIMIT_WAIT_S)
    if status >= 500:
        return Unavailable(
            f"Slack answered {method} with HTTP {status} and a page instead of JSON: Slack, or a proxy in front "
            "of it, is down or overloaded.",
            hint="Retry in a minute; status.slack.com says whether Slack has an incident.",
        )
    if status in (401, 403, 407):
        return Refused(
            f"Something between this server and Slack refused {method} with HTTP {status} and a page instead of JSON.",
            hint="Check the proxy or SLACK_API_URL: Slack itself answers errors as JSON.",
        )
    return Unavailable(
        f"Slack answered {method} with HTTP {status} and a page instead of JSON.",
        hint="Check SLACK_API_URL (default https://slack.com/api/): it may not point at the Slack Web API.",
    )


def _slack_says(data: Mapping[str, Any]) -> str:
    """Slack's own explanation of a refusal, from `response_metadata.messages` (invalid_arguments, invalid_blocks
    and the like carry one), as one bounded line: what a bug report needs beside the method and code."""
    meta = data.get("response_metadata")
    messages = meta.get("messages") if isinstance(meta, Mapping) else None
    if not isinstance(messages, list) or not messages:
        return ""
    lines = [" ".join(strip_invisible(str(m))[0].split()) for m in messages[:3]]
    said = "; ".join(line for line in lines if line)
    if len(said) > SAYS_MAX:
        said = said[: SAYS_MAX - 1] + "…"
    return f" Slack says: {said}." if said else ""


def failure_of(method: str, *, status: int, headers: Any, data: Mapping[str, Any]) -> ToolFailure:
    """The failure for one answer that was not a success: HTTP 429, a non-JSON page, or `ok: false`."""
    code = str(data.get("error") or "")
    if not _is_json(headers) or " " in code:  # slack-sdk puts "Received a response in a non-JSON format: <body>"
        return _not_json(method, status)
    if status == 429:
        seconds = retry_after_of(headers, default=DEFAULT_RATE_LIMIT_WAIT_S)
        return RateLimited(f"Slack rate-limited {method} (HTTP 429).", retry_after=seconds)
    code = code or "unknown_error"
    if code == "missing_scope":
        needed = data.get("needed") or "a scope Slack did not name"
        provided = data.get("provided")
        have = f" The token has: {provided}." if provided else ""
        return MissingScope(
            f"The Slack token lacks the scope {needed} that {method} needs.{have}",
            needed=str(needed),
            hint=f"Add {needed} to the app's OAuth scopes at api.slack.com/apps, reinstall it, and restart with the "
            "new token.",
        )
    meaning = ERRORS.get(code)
    if meaning is None:
        logger.info("Slack answered %s with the undocumented error %s", method, code)
        return Unavailable(
            f"Slack answered {method} with error {code}, which its documentation did not list when this server "
            "was written." + _slack_says(data),
            hint=f"docs.slack.dev/reference/methods/{method} may explain it; if it names a fix, apply it and retry.",
        )
    if meaning is _OUTAGE and method in WRITES:  # Slack documents that part of a failed call may have happened
        meaning = _WRITE_MAY_HAVE_HAPPENED
    says = meaning.says.format(method=method, code=code)
    if meaning.failure is RateLimited:
        return RateLimited(says, retry_after=retry_after_of(headers, default=DEFAULT_RATE_LIMIT_WAIT_S))
    return meaning.failure(says + _slack_says(data), hint=meaning.hint)
