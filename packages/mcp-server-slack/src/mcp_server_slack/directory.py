"""Users and channels by ID and by name: a cache with a TTL and a size cap, warmed lazily, a page at a time.

Nothing is fetched at start-up: the first tool call that needs a name fetches users.list / conversations.list
pages until the names it needs are known (at most `warm_pages` pages per call, so a huge workspace costs one
call a bounded wait, and the next call goes on from where the last stopped). Names are batched: a page of
a hundred messages from thirty people costs the users.list pages that hold them, never a call per message.
When the TTL runs out everything is fetched afresh, so renames show up.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_server_core import (
    InvalidArgument,
    NotFound,
    RateLimited,
    Refused,
    ToolFailure,
    Untrusted,
    did_you_mean,
    report_progress,
)

from mcp_server_slack.api import MissingScope, SlackApi
from mcp_server_slack.formatting import quoted

__all__ = ["Channel", "Directory", "Names", "User"]

logger = logging.getLogger(__name__)

CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{6,}$")
USER_ID = re.compile(r"^[UW][A-Z0-9]{6,}$")
_CHANNEL_LINK = re.compile(r"^<#([CGD][A-Z0-9]+)(?:\|[^>]*)?>$")
_USER_LINK = re.compile(r"^<@([UW][A-Z0-9]+)(?:\|[^>]*)?>$")

ALL_TYPES = ("public_channel", "private_channel", "mpim", "im")
# What conversations.list answers missing_scope with for each type, so the listing can go on without it.
_SCOPE_OF_TYPE = {"channels:read": "public_channel", "groups:read": "private_channel", "mpim:read": "mpim"}
_SCOPE_OF_TYPE["im:read"] = "im"

RELIST_AFTER_S = 30.0
"""A name missing from a complete channel listing this old makes the directory list channels again."""

INFO_LOOKUPS_PER_CALL = 10
"""users.info calls one tool call may make for IDs a complete listing lacked (new or external people)."""


def _unwrap(ref: str, link: re.Pattern[str]) -> str:
    """The reference with white space trimmed, and the ID alone if it came as a mention (<@U…> or <#C…|name>)."""
    text = ref.strip()
    found = link.match(text)
    return found.group(1) if found else text


def _typed(value: object) -> Untrusted:
    """What a person typed into Slack (a name, a title, a status, a topic): kept whole, shown only in its one-line
    form, so two different names never look alike (an invisible character stripped would make "ad\u200bmin"
    read as "admin")."""
    return Untrusted(value if isinstance(value, str) else None)


_NOBODY = Untrusted("")


@dataclass(frozen=True)
class User:
    id: str
    name: Untrusted
    real_name: Untrusted = _NOBODY
    display_name: Untrusted = _NOBODY
    email: str | None = None
    title: Untrusted = _NOBODY
    tz: str | None = None
    is_bot: bool = False
    is_admin: bool = False
    deleted: bool = False
    status: Untrusted = _NOBODY

    @property
    def handle(self) -> Untrusted:
        """What Slack shows after @: the display name, else the username."""
        return self.display_name or self.name

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> User:
        profile = data.get("profile") or {}
        status = " ".join(
            p for p in (profile.get("status_emoji"), profile.get("status_text")) if isinstance(p, str) and p
        )
        return cls(
            id=str(data["id"]),
            name=_typed(data.get("name") or data["id"]),
            real_name=_typed(data.get("real_name") or profile.get("real_name")),
            display_name=_typed(profile.get("display_name")),
            email=profile.get("email"),
            title=_typed(profile.get("title")),
            tz=data.get("tz"),
            is_bot=bool(data.get("is_bot")),
            is_admin=bool(data.get("is_admin")),
            deleted=bool(data.get("deleted")),
            status=Untrusted(status),
        )


@dataclass(frozen=True)
class Channel:
    id: str
    name: Untrusted
    kind: str  # public, private, mpim, im
    is_member: bool = False
    is_archived: bool = False
    topic: Untrusted = _NOBODY
    purpose: Untrusted = _NOBODY
    members: int | None = None
    peer: str | None = None  # the other user of an IM
    created: int | None = None

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Channel:
        if data.get("is_im"):
            kind = "im"
        elif data.get("is_mpim"):
            kind = "mpim"
        elif data.get("is_private") or data.get("is_group"):
            kind = "private"
        else:
            kind = "public"
        return cls(
            id=str(data["id"]),
            name=_typed(data.get("name") or data.get("user") or data["id"]),
            kind=kind,
            is_member=bool(data.get("is_member", kind == "im")),
            is_archived=bool(data.get("is_archived")),
            topic=_typed((data.get("topic") or {}).get("value")),
            purpose=_typed((data.get("purpose") or {}).get("value")),
            members=data.get("num_members"),
            # search.messages names a DM by its peer's user ID and leaves `user` out.
            peer=data.get("user") or (data.get("name") if kind == "im" else None),
            created=data.get("created"),
        )


class Names(dict[str, User]):
    """The users a batch could name; `unnamed_because` says why the rest show as IDs (None if none failed)."""

    unnamed_because: str | None = None


def _why_unnamed(missing: int, exc: ToolFailure) -> str:
    if isinstance(exc, RateLimited):
        wait = f" in {exc.retry_after:.0f} s" if exc.retry_after is not None else " shortly"
        return (
            f"{missing} name(s) shown as user IDs: Slack rate-limited the user listing (users.list); "
            f"call again{wait} to see names."
        )
    return f"{missing} name(s) shown as user IDs: the user listing failed. {exc}"


class _Cache:
    """An insertion-ordered, size-capped map with one expiry for the whole listing it came from."""

    def __init__(self, ttl_s: float, max_items: int) -> None:
        self.ttl_s = ttl_s
        self.max_items = max_items
        self.items: OrderedDict[str, Any] = OrderedDict()
        self.cursor: str | None = None
        self.complete = False
        self.overflowed = False
        self.started = 0.0

    def expire(self) -> None:
        if self.started and time.monotonic() - self.started > self.ttl_s:
            self.items.clear()
            self.cursor, self.complete, self.overflowed, self.started = None, False, False, 0.0

    def put(self, key: str, value: Any) -> bool:
        """Store; True if the key is new."""
        if not self.started:
            self.started = time.monotonic()
        new = key not in self.items
        self.items[key] = value
        self.items.move_to_end(key)
        while len(self.items) > self.max_items:
            self.items.popitem(last=False)
            self.overflowed = True  # a complete listing no longer fits: misses are looked up one by one
        return new

    @property
    def settled(self) -> bool:
        """Nothing more to list: the listing is complete, or it no longer fits and misses are looked up."""
        return self.complete or self.overflowed

    def listing(self) -> tuple[list[Any], bool]:
        """Everything cached, and whether that is the whole listing."""
        return list(self.items.values()), self.complete and not self.overflowed


class Directory:
    """Who and where: the names tools print and the IDs tools need, shared by every tool and resource."""

    def __init__(
        self,
        api: SlackApi,
        *,
        ttl_s: float = 600.0,
        max_items: int = 20_000,
        page_size: int = 200,
        warm_pages: int = 10,
        on_new_channels: Callable[[list[Channel]], None] | None = None,
    ) -> None:
        self.api = api
        self.page_size = page_size
        self.warm_pages = warm_pages
        self.on_new_channels = on_new_channels
        self._users = _Cache(ttl_s, max_items)
        self._channels = _Cache(ttl_s, max_items)
        self._types: list[str] = list(ALL_TYPES)
        self._listed_at = 0.0
        self._lock = threading.RLock()

    # --- users -----------------------------------------------------------------------------------------------

    def users(self, ids: Iterable[str], *, lookups: int = INFO_LOOKUPS_PER_CALL) -> Names:
        """The users among `ids` that can be named; best effort, so a listing failure leaves IDs unnamed and
        says why in `unnamed_because`."""
        wanted = {i for i in ids if i and USER_ID.match(i)}
        with self._lock:
            self._users.expire()
            found = Names({i: self._users.items[i] for i in wanted if i in self._users.items})
            missing = wanted - set(found)
            try:
                pages = 0
                while missing and not self._users.settled and pages < self.warm_pages:
                    pages += 1
                    # Taken from the page itself: in a workspace larger than the cache, the entries a call
                    # needs may already have been evicted by the rest of the page.
                    for user in self._users_page():
                        if user.id in missing:
                            found[user.id] = user
                            missing.discard(user.id)
                not_named: ToolFailure | None = None
                for user_id in sorted(missing)[:lookups]:
                    try:
                        found[user_id] = self.user_by_id(user_id)
                    except (NotFound, Refused) as exc:
                        if isinstance(exc, MissingScope):  # the token's, not this person's: no lookup can work
                            raise
                        not_named = exc  # this person alone (user_not_found, user_not_visible): on to the next
                missing -= set(found)
                if not_named is not None:
                    found.unnamed_because = (
                        f"{len(missing)} name(s) shown as user IDs: Slack did not say who they are. {not_named}"
                    )
            except ToolFailure as exc:
                logger.info("names of %d user(s) left unresolved: %s", len(missing), exc)
                found.unnamed_because = _why_unnamed(len(missing), exc)
        return found

    def user_by_id(self, user_id: str) -> User:
        with self._lock:
            self._users.expire()
            if user_id in self._users.items:
                cached: User = self._users.items[user_id]
                return cached
            user = User.from_api(self.api.call("users.info", user=user_id)["user"])
            self._users.put(user.id, user)
            return user

    def all_users(self) -> tuple[list[User], bool]:
        """Every user known after warming up to `warm_pages` more pages, and whether that is all of them."""
        with self._lock:
            self._users.expire()
            pages = 0
            while not self._users.settled and pages < self.warm_pages:
                self._users_page()
                pages += 1
            return self._users.listing()

    def find_user(self, query: str) -> User:
        """A user by ID, <@ID>, email, @handle, username or real name."""
        text = _unwrap(query, _USER_LINK)
        if USER_ID.match(text):
            return self.user_by_id(text)
        if "@" in text and not text.startswith("@"):
            data = self.api.call("users.lookupByEmail", email=text)
            user = User.from_api(data["user"])
            with self._lock:
                self._users.put(user.id, user)
            return user
        wanted = text.lstrip("@").casefold()
        users, complete = self.all_users()
        for match_on in ("name", "display_name", "real_name"):
            for user in users:
                if getattr(user, match_on).raw.casefold() == wanted:
                    return user
        names = [str(u.name) for u in users]
        more = "" if complete else " Only part of a large workspace was searched; pass the user ID or email instead."
        raise NotFound(
            f"No user named {query!r}.{more}", hint=did_you_mean(wanted, names, noun="user") + " list_users searches."
        )

    def _users_page(self) -> list[User]:
        data = self.api.call("users.list", limit=self.page_size, cursor=self._users.cursor)
        users = [User.from_api(member) for member in data.get("members") or []]
        for user in users:
            self._users.put(user.id, user)
        self._users.cursor = (data.get("response_metadata") or {}).get("next_cursor") or None
        if self._users.cursor is None:
            self._users.complete = True
        # Slack does not say how many pages a workspace has: the count so far is the progress, with no total.
        report_progress(len(self._users.items), None, f"Listing people for names: {len(self._users.items):,} so far")
        return users

    # --- channels --------------------------------------------------------------------------------------------

    def channel_by_id(self, channel_id: str) -> Channel:
        with self._lock:
            self._channels.expire()
            if channel_id in self._channels.items:
                cached: Channel = self._channels.items[channel_id]
                return cached
        channel = Channel.from_api(self.api.call("conversations.info", channel=channel_id)["channel"])
        self._announce(self._remember([channel]))
        return channel

    def channels(self, ids: Iterable[str]) -> dict[str, Channel]:
        """Cached channels among `ids` (mentions are named from the cache only: no call per mention)."""
        with self._lock:
            return {i: self._channels.items[i] for i in ids if i in self._channels.items}

    def all_channels(self) -> tuple[list[Channel], bool]:
        """Every channel the token can list after up to `warm_pages` more pages, and whether that is all."""
        pages = 0
        new: list[Channel] = []
        try:
            while pages < self.warm_pages:
                with self._lock:
                    self._channels.expire()
                    if self._channels.settled:
                        break
                new += self._channels_page()
                pages += 1
        finally:
            # Once for the whole listing, not per page: a client hears one list_changed however slow Slack is.
            self._announce(new)
        with self._lock:
            return self._channels.listing()

    def find_channel(self, ref: str) -> Channel:
        """A channel by ID, <#ID|name>, #name or name."""
        text = _unwrap(ref, _CHANNEL_LINK)
        if CHANNEL_ID.match(text):
            return self.channel_by_id(text)
        name = text.lstrip("#").casefold()
        if not name:
            raise InvalidArgument("The channel is empty.", hint="Pass a channel ID (C0123ABCD) or a #name.")
        with self._lock:
            self._channels.expire()
            for channel in self._channels.items.values():
                if channel.name.raw.casefold() == name:
                    found: Channel = channel
                    return found
        channels, complete = self.all_channels()
        if complete and not any(c.name.raw.casefold() == name for c in channels) and self._may_relist():
            # A channel created (or renamed) since the listing: list once more rather than wait out the TTL.
            channels, complete = self.all_channels()
        for channel in channels:
            if channel.name.raw.casefold() == name:
                return channel
        more = "" if complete else " Only part of a large workspace was listed; pass the channel ID instead."
        raise NotFound(
            f"No channel named {ref!r} that this token can see.{more}",
            hint=did_you_mean(name, [str(c.name) for c in channels if c.kind != "im"], noun="channel")
            + " A private channel needs the app invited.",
        )

    def _may_relist(self) -> bool:
        """Start the channel listing over, at most once per RELIST_AFTER_S; True if it was."""
        with self._lock:
            now = time.monotonic()
            if now - self._listed_at < RELIST_AFTER_S:
                return False
            self._listed_at = now
            self._channels.cursor, self._channels.complete = None, False
            return True

    def _channels_page(self) -> list[Channel]:
        """One more page of the channel listing; the channels it showed for the first time."""
        with self._lock:
            cursor = self._channels.cursor
            types = list(self._types)
        while True:
            try:
                data = self.api.call(
                    "conversations.list",
                    types=",".join(types),
                    limit=self.page_size,
                    cursor=cursor,
                    exclude_archived=False,
                )
                break
            except MissingScope as exc:
                # A token without im:read (say) still lists the channels it may see: drop that type and go on.
                needed = exc.needed
                dropped = _SCOPE_OF_TYPE.get(needed)
                if dropped is None or dropped not in types or len(types) == 1:
                    raise
                types.remove(dropped)
                logger.info("listing channels without %s: the token lacks %s", dropped, needed)
        channels = [Channel.from_api(c) for c in data.get("channels") or []]
        next_cursor = (data.get("response_metadata") or {}).get("next_cursor") or None
        with self._lock:
            self._types = types
            self._channels.cursor = next_cursor
            if next_cursor is None:
                self._channels.complete = True
                self._listed_at = time.monotonic()
        new = self._remember(channels)
        seen = len(self._channels.items)
        report_progress(seen, None, f"Listing channels: {seen:,} so far")
        return new

    def _remember(self, channels: list[Channel]) -> list[Channel]:
        """Cache the channels; the ones not cached before."""
        with self._lock:
            self._channels.expire()
            return [c for c in channels if self._channels.put(c.id, c)]

    def _announce(self, new: list[Channel]) -> None:
        if new and self.on_new_channels is not None:
            self.on_new_channels(new)

    def seen_channels(self) -> list[Channel]:
        with self._lock:
            return list(self._channels.items.values())

    # --- labels ----------------------------------------------------------------------------------------------

    def label(self, channel: Channel, users: dict[str, User] | None = None) -> str:
        """#general, or "DM with @alice" for an IM: built from one-line forms, a name quoted where it holds more
        than a name does (so "#general (member)" cannot pass for a flag the server adds)."""
        if channel.kind == "im":
            peer = (users or {}).get(channel.peer or "") or self._cached_user(channel.peer)
            return f"DM with @{quoted(peer.handle)}" if peer else f"DM {Untrusted(channel.id)}"
        if channel.kind == "mpim":
            return f"group DM {quoted(channel.name)}"
        return f"#{quoted(channel.name)}"

    def _cached_user(self, user_id: str | None) -> User | None:
        with self._lock:
            cached: User | None = self._users.items.get(user_id or "")
            return cached
