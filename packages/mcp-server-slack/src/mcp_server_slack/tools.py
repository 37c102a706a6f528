"""The tools: read channels, messages, threads, people and search; post and react only where allowed."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import anyio
from mcp_server_core import (
    Cursor,
    InvalidArgument,
    Limit,
    NotFound,
    Refused,
    Rendered,
    Toolset,
    decode_cursor,
    encode_cursor,
    note_in_answer,
    report_progress,
)
from mcp_server_core.conventions.places import Place, PlaceOf
from mcp_server_core.conventions.tools import unadvertised
from mcp_server_core.conventions.untrusted import Untrusted, fence, one_line
from pydantic import Field

from mcp_server_slack.api import SlackApi
from mcp_server_slack.directory import CHANNEL_ID, USER_ID, Channel, Directory, User
from mcp_server_slack.formatting import parse_time, quoted, ts_to_iso
from mcp_server_slack.messages import TEXT_BUDGET, MessagePage, fit, fit_items, to_records
from mcp_server_slack.posting import MentionPolicy, to_mrkdwn

__all__ = ["WritePolicy", "read_toolset", "write_toolset"]

logger = logging.getLogger(__name__)

# Lean schemas on purpose: tools/list is paid for in every conversation (budget 3,000 bytes, reads only). The
# lengths and ts patterns below bound what the server accepts; no model comes near them, so they are enforced,
# not advertised.
ChannelRef = Annotated[
    str, Field(description="ID or #name", max_length=200, json_schema_extra=unadvertised("maxLength"))
]
Ts = Annotated[str, Field(pattern=r"^\d{9,11}\.\d{1,6}$", json_schema_extra=unadvertised("pattern"))]
When = Annotated[str | None, Field(max_length=40, json_schema_extra=unadvertised("maxLength"))]
"""A Slack ts, an ISO date or time, or a span back from now (2h, 7d): the tool's description says so once."""
Name = Annotated[str | None, Field(max_length=200, json_schema_extra=unadvertised("maxLength"))]


# --- where a call reads and writes: the confirmation of cross writes (the helpers' flows.py) ---------------

SEARCH_RESULTS = Place("search results", "slack", "from Slack")
"""What a search read: messages from any channel the token sees, so no channel a post goes to is that place."""


def channel_place(directory: Directory, find: Callable[[str], Channel] | None = None) -> PlaceOf:
    """The channel a call names, by its ID (however the model spelled it: C0123, #general, <#C0123|general>),
    so that reading #general and posting to C0123 are one place. Resolved in a worker thread (the directory may
    ask Slack) by `find` (a write's: the write allow-list's check, so a channel it refuses is refused before the
    user is asked about it); a name that resolves to nothing fails here as the tool itself would."""

    async def declared(arguments: Mapping[str, Any]) -> Place | None:
        ref = arguments.get("channel")
        if not isinstance(ref, str):
            return None
        found = await anyio.to_thread.run_sync(find or directory.find_channel, ref)
        return Place("channel", found.id, directory.label(found))

    return declared


def _searched(_arguments: Mapping[str, Any]) -> Place:
    return SEARCH_RESULTS


# --- results ---------------------------------------------------------------------------------------------


def _channel_line(c: dict[str, Any]) -> str:
    flags = [c["kind"]]
    if c.get("is_member"):
        flags.append("member")
    if c.get("is_archived"):
        flags.append("archived")
    if c.get("members") is not None:
        flags.append(f"{c['members']} members")
    return f"{c['id']} {c['label']} ({', '.join(flags)})"


def _channel_dict(channel: Channel, directory: Directory) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": channel.id,
        "label": directory.label(channel),
        "kind": channel.kind,
        "is_member": channel.is_member,
    }
    for key in ("is_archived", "members"):
        value = getattr(channel, key)
        if value not in (None, False):
            found[key] = value
    for key in ("topic", "purpose"):  # someone's words: the record holds their one-line form
        if getattr(channel, key):
            found[key] = str(getattr(channel, key))
    if channel.created:
        found["created"] = ts_to_iso(channel.created)
    return found


LISTING_BYTES = 15_000
"""Text one page of channels or people takes (and as much again for its records): the default budget less
room for the notes and the cursor."""

DETAIL_UP_TO = 5
"""A listing this short is a lookup: it shows each channel's topic and purpose too."""


def _note(note: str | None) -> None:
    """A line for the reader of the text only (a directory still loading, names missing), opening the answer:
    kept out of the structured content, whose outputSchema is paid for in every conversation."""
    if note:
        note_in_answer(note)


class ChannelList(Rendered):
    channels: list[dict[str, Any]]
    next_cursor: str | None = None

    def render(self) -> str:
        lines = []
        for c in self.channels:
            lines.append(_channel_line(c))
            if len(self.channels) <= DETAIL_UP_TO:
                if c.get("created"):
                    lines.append(f"  created {c['created']}")
                about = "\n".join(f"{key}: {c[key]}" for key in ("topic", "purpose") if c.get(key))
                if about:  # anyone in the channel can set these: someone else's words, like a message
                    lines.append(fence(about, what=f"topic and purpose of {c['label']}"))
        lines = lines or ["No channel matches."]
        lines += [f"next_cursor={self.next_cursor}"] if self.next_cursor else []
        return "\n".join(lines)


def _user_dict(user: User, *, full: bool = False) -> dict[str, Any]:
    """A person's record: what they typed about themselves (names, title, status) in its one-line form."""
    found: dict[str, Any] = {"id": user.id, "handle": str(user.handle), "name": str(user.name)}
    keys = ["real_name", "title", "email", "is_bot", "deleted"]
    if full:
        keys += ["display_name", "tz", "is_admin", "status"]
    for key in keys:
        value = getattr(user, key)
        if isinstance(value, Untrusted | str):
            if value:
                found[key] = str(value) if isinstance(value, Untrusted) else one_line(value)
        elif value not in (None, False):
            found[key] = value
    return found


def _user_line(u: dict[str, Any]) -> str:
    # Names are quoted where they hold more than a name does: "[admin]" or "(owner)" in a title is not the
    # server's flag.
    parts = [u["id"], f"@{quoted(u['handle'])}"]
    parts += [quoted(u[key]) for key in ("real_name", "title", "status") if u.get(key)]
    parts += [str(u[key]) for key in ("email", "tz") if u.get(key)]
    flags = (("is_bot", "[bot]"), ("is_admin", "[admin]"), ("deleted", "[deactivated]"))
    parts += [label for key, label in flags if u.get(key)]
    return " · ".join(parts)


def _matching(users: list[User], query: str | None) -> list[User]:
    wanted = query.strip().lstrip("@").casefold() if query else None
    if wanted is None:
        return list(users)
    return [
        u
        for u in users
        if any(wanted in (v or "").casefold() for v in (u.id, u.name.raw, u.real_name.raw, u.display_name.raw, u.email))
    ]


def _exact_user(directory: Directory, query: str) -> User | None:
    """The one user an ID, <@ID>, email or exact @handle names; None when the query is a search."""
    text = query.strip()
    if USER_ID.match(text) or text.startswith("<@") or ("@" in text and not text.startswith("@")):
        return directory.find_user(text)
    try:
        return directory.find_user(text) if text.startswith("@") else None
    except NotFound:
        return None


class UserList(Rendered):
    users: list[dict[str, Any]]
    next_cursor: str | None = None

    def render(self) -> str:
        lines = [_user_line(u) for u in self.users] or ["No user matches."]
        lines += [f"next_cursor={self.next_cursor}"] if self.next_cursor else []
        return "\n".join(lines)


class Posted(Rendered):
    channel: str
    ts: str
    thread_ts: str | None = None

    def render(self) -> str:
        where = f"in thread {self.thread_ts} of " if self.thread_ts else "to "
        return f"Posted {where}{self.channel}: ts={self.ts} ({ts_to_iso(self.ts)})"


class Reacted(Rendered):
    channel: str
    ts: str
    emoji: str
    already: bool = False

    def render(self) -> str:
        if self.already:
            return f":{self.emoji}: was already on {self.ts} in {self.channel}."
        return f"Added :{self.emoji}: to {self.ts} in {self.channel}."


# --- helpers ---------------------------------------------------------------------------------------------


def _offset(cursor: str | None, scope: str) -> int:
    return int(decode_cursor(cursor, scope=scope).get("o", 0)) if cursor else 0


def _next_offset(offset: int, shown: int, total: int, scope: str) -> str | None:
    return encode_cursor({"o": offset + shown}, scope=scope) if offset + shown < total else None


def _partial(complete: bool, noun: str, count: int) -> str | None:
    if complete:
        return None
    return f"Directory still loading: {count:,} {noun} seen so far; call again to see more of a large workspace."


# --- the read tools --------------------------------------------------------------------------------------


class Permalinks:
    """Message links, as chat.getPermalink gives them, for a whole page at the cost of one call per server.

    The first link Slack returns shows this workspace's link host (a workspace or Enterprise Grid domain); the
    rest follow Slack's own pattern, /archives/<channel>/p<ts without the dot>, plus thread_ts for a reply.
    """

    def __init__(self, api: SlackApi) -> None:
        self.api = api
        self._prefix: str | None = None

    def link(self, channel_id: str, ts: str, thread_ts: str | None = None) -> str:
        if self._prefix is None:
            permalink = str(self.api.call("chat.getPermalink", channel=channel_id, message_ts=ts).get("permalink"))
            head, marker, _ = permalink.partition("/archives/")
            if not marker:
                return permalink
            self._prefix = head
        link = f"{self._prefix}/archives/{channel_id}/p{ts.replace('.', '')}"
        if thread_ts and thread_ts != ts:
            link += f"?thread_ts={thread_ts}&cid={channel_id}"
        return link


def read_toolset(api: SlackApi, directory: Directory) -> Toolset:
    toolset = Toolset("read", "Channels, messages, threads, people and search")
    links = Permalinks(api)

    @toolset.tool(title="List channels", read_only=True, open_world=True)
    def list_channels(
        query: Annotated[str | None, Field(max_length=80, json_schema_extra=unadvertised("maxLength"))] = None,
        member_only: bool = False,
        limit: Annotated[Limit, Field(le=500)] = 100,
        cursor: Cursor = None,
    ) -> ChannelList:
        """Find channels and DMs by name: IDs, topic, purpose."""
        scope = json.dumps([query, member_only])
        offset = _offset(cursor, scope)
        channels, complete = directory.all_channels()
        wanted = query.lstrip("#@").casefold() if query else None
        if wanted is not None:  # a DM is found by its person's name: one batch of names for all of them
            directory.users(c.peer for c in channels if c.peer)

        def matches(c: Channel) -> bool:
            return wanted is None or wanted in c.name.raw.casefold() or wanted in directory.label(c).casefold()

        chosen = [c for c in channels if (c.is_member or not member_only) and matches(c)]
        chosen.sort(key=lambda c: (c.is_archived, c.kind == "im", c.name.raw.casefold()))
        page = chosen[offset : offset + limit]
        if any(c.kind == "im" for c in page):
            directory.users(c.peer for c in page if c.peer)  # one batch, so DMs read "DM with @alice"
        _note(_partial(complete, "channels", len(channels)))
        found = [_channel_dict(c, directory) for c in page]
        found = found[: fit_items(found, _channel_line, LISTING_BYTES)]
        return ChannelList(channels=found, next_cursor=_next_offset(offset, len(found), len(chosen), scope))

    in_channel = channel_place(directory)

    @toolset.tool(title="Read messages", read_only=True, open_world=True, budget=TEXT_BUDGET + 1_000, reads=in_channel)
    def read_messages(
        channel: ChannelRef,
        thread_ts: Annotated[
            str | None, Field(pattern=r"^\d+\.\d+$", json_schema_extra=unadvertised("pattern"))
        ] = None,
        oldest: When = None,
        latest: When = None,
        permalinks: bool = False,
        limit: Annotated[Limit, Field(le=200)] = 50,
        cursor: Cursor = None,
    ) -> MessagePage:
        """Read a channel (newest first) or a thread; oldest/latest take a ts, ISO time or 2h/7d."""
        found = directory.find_channel(channel)
        scope = json.dumps([found.id, thread_ts, oldest, latest])
        position = decode_cursor(cursor, scope=scope) if cursor else {}
        bounds = {
            "oldest": position.get("oldest") or (parse_time(oldest) if oldest else None),
            "latest": position.get("latest") or (parse_time(latest) if latest else None),
        }
        if bounds["oldest"] and bounds["latest"] and float(bounds["oldest"]) > float(bounds["latest"]):
            raise InvalidArgument("oldest is after latest.", hint="Swap them: oldest is the earlier time.")
        common: dict[str, Any] = {"channel": found.id, "limit": limit, "cursor": position.get("c"), **bounds}
        if thread_ts:
            data = api.call("conversations.replies", ts=thread_ts, **common)
        else:
            data = api.call("conversations.history", **common)
        raws = list(data.get("messages") or [])
        report_progress(len(raws), None, f"{len(raws)} message(s) read; naming their authors")
        if thread_ts and cursor:  # Slack repeats the thread's first message on every page: show it once
            raws = [r for r in raws if r.get("ts") != thread_ts]
        if found.peer:  # a DM is labelled by the other person: their name joins the page's one batch
            directory.users([found.peer, *(str(r["user"]) for r in raws if r.get("user"))])
        label = directory.label(found)
        records, unnamed = to_records(raws, directory, channel_label=label)
        if permalinks:
            for record in records:
                record["permalink"] = links.link(found.id, record["ts"], record.get("thread_ts"))
        shown = fit(records)
        next_slack = (data.get("response_metadata") or {}).get("next_cursor") or None
        next_position: dict[str, Any] | None = None
        if shown < len(records):
            # Cut for the text budget: go on from the last message shown (history is newest first, threads
            # oldest first), so nothing between two pages is skipped.
            last = records[shown - 1]["ts"]
            next_position = {**bounds, "oldest": last} if thread_ts else {**bounds, "latest": last}
        elif next_slack and data.get("has_more", True):
            # The bounds ride along: "2h" means two hours before the first page, not before each page.
            next_position = {"c": next_slack, **bounds}
        where = f"thread {thread_ts} in {label} ({found.id}), oldest first" if thread_ts else f"{label} ({found.id})"
        _note(unnamed)
        return MessagePage(
            source=where if thread_ts else f"{where}, newest first",
            messages=records[:shown],
            next_cursor=encode_cursor(next_position, scope=scope) if next_position else None,
        ).of_channel(label)

    @toolset.tool(title="Find users", read_only=True, open_world=True, reads=in_channel)
    def list_users(
        query: Name = None,
        channel: Name = None,
        limit: Annotated[Limit, Field(le=500)] = 100,
        cursor: Cursor = None,
    ) -> UserList:
        """Find people by ID, name or email, or a channel's members."""
        scope = json.dumps([query, channel])
        if channel:
            return _members(directory, channel, query, limit, cursor)
        offset = _offset(cursor, scope)
        exact = _exact_user(directory, query) if query and not cursor else None
        if exact is not None:
            return UserList(users=[_user_dict(exact, full=True)])
        users, complete = directory.all_users()
        chosen = sorted(_matching(users, query), key=lambda u: (u.deleted, u.is_bot, u.handle.raw.casefold()))
        page = [_user_dict(u, full=len(chosen) == 1) for u in chosen[offset : offset + limit]]
        page = page[: fit_items(page, _user_line, LISTING_BYTES)]
        _note(_partial(complete, "users", len(users)))
        return UserList(users=page, next_cursor=_next_offset(offset, len(page), len(chosen), scope))

    def _members(directory: Directory, channel: str, query: str | None, limit: int, cursor: str | None) -> UserList:
        found = directory.find_channel(channel)
        scope = json.dumps([query, found.id])
        position = decode_cursor(cursor, scope=scope) if cursor else {}
        slack_cursor, skip = position.get("c"), int(position.get("s", 0))
        data = api.call("conversations.members", channel=found.id, limit=limit, cursor=slack_cursor)
        ids = [str(i) for i in data.get("members") or []]
        users = directory.users(ids, lookups=limit)
        known = [users[i] for i in ids if i in users]
        members = [_user_dict(u) for u in _matching(known, query)]
        if not query:
            members += [{"id": one_line(i), "handle": one_line(i), "name": one_line(i)} for i in ids if i not in users]
        next_slack = (data.get("response_metadata") or {}).get("next_cursor") or None
        members = members[skip:]
        shown = fit_items(members, _user_line, LISTING_BYTES)
        # A Slack page that does not fit one answer is read again from where this one stopped.
        after = {"c": slack_cursor, "s": skip + shown} if shown < len(members) else {"c": next_slack}
        _note(f"Members of {directory.label(found)} ({found.id}).")
        _note(users.unnamed_because)
        return UserList(
            users=members[:shown],
            next_cursor=encode_cursor(after, scope=scope) if after["c"] or "s" in after else None,
        )

    @toolset.tool(title="Search messages", read_only=True, open_world=True, budget=TEXT_BUDGET + 1_000, reads=_searched)
    def search_messages(
        query: Annotated[
            str,
            Field(
                description="e.g. deploy in:#ops from:@ana", max_length=400, json_schema_extra=unadvertised("maxLength")
            ),
        ],
        limit: Annotated[Limit, Field(le=100)] = 20,
        cursor: Cursor = None,
    ) -> MessagePage:
        """Search messages across channels (needs a user token)."""
        api.token_kind("search.messages")  # fails at once, with the fix, when only a bot token is set
        scope = json.dumps([query, limit])
        position = decode_cursor(cursor, scope=scope) if cursor else {"page": 1, "skip": 0}
        page, skip = int(position["page"]), int(position.get("skip", 0))
        data = api.call("search.messages", query=query, count=limit, page=page, highlight=False)
        found = data.get("messages") or {}
        raws = list(found.get("matches") or [])[skip:]
        pages = int((found.get("paging") or {}).get("pages") or page)
        report_progress(page, pages, f"Search page {page} of {pages} read; naming the authors of {len(raws)} hit(s)")
        records, unnamed = to_records(raws, directory)
        shown = fit(records)
        paging = found.get("paging") or {}
        if shown < len(records):
            next_position: dict[str, int] | None = {"page": page, "skip": skip + shown}
        elif page < int(paging.get("pages") or 0):
            next_position = {"page": page + 1, "skip": 0}
        else:
            next_position = None
        total = paging.get("total", found.get("total"))
        _note(unnamed)
        return MessagePage(
            source=f"Search {query!r}: {total} match(es) in all" if total is not None else f"Search {query!r}",
            messages=records[:shown],
            next_cursor=encode_cursor(next_position, scope=scope) if next_position else None,
        )

    return toolset


# --- the write tools -------------------------------------------------------------------------------------


class WritePolicy:
    """Where writes may go (channel IDs, names resolved to IDs at each check) and what a post may say."""

    def __init__(self, directory: Directory, allowed: list[str], mentions: MentionPolicy) -> None:
        self.directory = directory
        self.allowed = allowed
        self.mentions = mentions

    def allowed_ids(self) -> set[str]:
        ids = set()
        for ref in self.allowed:
            if CHANNEL_ID.match(ref):
                ids.add(ref)
                continue
            try:
                ids.add(self.directory.find_channel(ref).id)
            except NotFound as exc:  # a name in the allow-list that no longer exists allows nothing
                logger.warning("write channel %r cannot be resolved: %s", ref, exc)
        return ids

    def check_channel(self, ref: str) -> Channel:
        channel = self.directory.find_channel(ref)
        if channel.id not in self.allowed_ids():
            raise Refused(
                f"Writing to {self.directory.label(channel)} ({channel.id}) is not allowed by this server.",
                hint=f"It may write only to: {', '.join(self.allowed)} (set with --write-channels).",
            )
        return channel

    def message(self, text: str, mention: list[str] | None) -> str:
        """The text Slack is sent: the model's escaped (posting.py), after the mentions it was allowed."""
        tags = self.mentions.markup(mention or [])
        body, had_markup = to_mrkdwn(text)
        if had_markup:
            note_in_answer("(Mention markup in the text was posted as plain text; pass mention to notify.)")
        return f"{tags} {body}" if tags else body


MessageText = Annotated[str, Field(description="mrkdwn text", min_length=1, max_length=40_000)]
Mention = Annotated[list[str] | None, Field(description="user/group IDs or here to notify")]


def write_toolset(api: SlackApi, directory: Directory, policy: WritePolicy) -> Toolset:
    toolset = Toolset("write", "Post messages and reactions to allowed channels")

    def post(
        channel: str, text: str, thread_ts: str | None, mention: list[str] | None, broadcast: bool = False
    ) -> Posted:
        message = policy.message(text, mention)
        found = policy.check_channel(channel)
        data = api.call(
            "chat.postMessage",
            json_body=True,
            channel=found.id,
            text=message,
            thread_ts=thread_ts,
            reply_broadcast=True if broadcast else None,
            # A posted link must not make Slack fetch it: a preview request can carry data out to its host.
            unfurl_links=False,
            unfurl_media=False,
        )
        return Posted(channel=f"{directory.label(found)} ({found.id})", ts=str(data.get("ts")), thread_ts=thread_ts)

    to_channel = channel_place(directory, policy.check_channel)

    @toolset.tool(title="Post message", read_only=False, open_world=True, writes=to_channel)
    def post_message(channel: ChannelRef, text: MessageText, mention: Mention = None) -> Posted:
        """Post a message to an allowed channel (link previews off)."""
        return post(channel, text, None, mention)

    @toolset.tool(title="Reply in thread", read_only=False, open_world=True, writes=to_channel)
    def reply_to_thread(
        channel: ChannelRef, thread_ts: Ts, text: MessageText, also_to_channel: bool = False, mention: Mention = None
    ) -> Posted:
        """Reply in a thread in an allowed channel."""
        return post(channel, text, thread_ts, mention, also_to_channel)

    @toolset.tool(title="Add reaction", read_only=False, open_world=True, idempotent=True, writes=to_channel)
    def add_reaction(
        channel: ChannelRef,
        ts: Ts,
        emoji: Annotated[str, Field(description="emoji name, e.g. thumbsup", pattern=r"^:?[a-z0-9_+\-']+:?$")],
    ) -> Reacted:
        """Add an emoji reaction to a message in an allowed channel."""
        found = policy.check_channel(channel)
        name = emoji.strip(":")
        data = api.call("reactions.add", channel=found.id, timestamp=ts, name=name, tolerate={"already_reacted"})
        return Reacted(channel=directory.label(found), ts=ts, emoji=name, already=not data.get("ok", True))

    return toolset
