"""One door to GitHub: the allow-list, conditional requests, errors, Link pagination; PyGithub's requester
underneath (`transport`, imported on the first request).

Every tool goes through `GitHubApi.request`, so the allow-list is checked in exactly one place before any
request leaves, GitHub's failures become the family's `ToolFailure` types in one place, and each tool call makes
a known number of requests: results are read from the JSON GitHub sent, never from PyGithub's lazy attributes,
whose hidden completions are how N+1 request patterns creep in.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from mcp_server_core import (
    Conflict,
    InvalidArgument,
    NotFound,
    RateLimited,
    Refused,
    ToolFailure,
    Unavailable,
    decode_cursor,
    encode_cursor,
    note_in_answer,
    report_progress,
    take_within_budget,
    upstream_span,
)
from mcp_server_core.conventions.untrusted import one_line
from mcp_server_core.operations.audit import audit_target

from mcp_server_github.allowlist import AllowList
from mcp_server_github.settings import GitHubSettings

if TYPE_CHECKING:
    from mcp_server_core.auth.upstream import UpstreamIdentity

    from mcp_server_github.transport import Transport

logger = logging.getLogger(__name__)

_REPO_PATH = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)(?:/|$)")
_REPO_BY_ID = re.compile(r"^/repositories/(?P<id>\d+)(?P<rest>/.*)?$")
# Paths that name no repository; with an allow-list, nothing else is sent.
_UNSCOPED = re.compile(r"^/(?:user|rate_limit|users/[^/]+|search/users)$")
_SEARCH = re.compile(r"^/search/(?:issues|code|repositories|commits)$")
_LINK = re.compile(r'<(?P<url>[^>]+)>\s*;\s*rel="(?P<rel>[^"]+)"')
_ETAG_ENTRIES = 256
PAGE_BYTES = 12_000
"""About how much text one page of a list may bring (bodies count in full, up to their cut)."""
CALLER_CLIENTS = 64
"""With each caller as themselves: the PyGithub clients (and what each read) kept at once, most recent first."""
CALLER_ETAG_ENTRIES = 32
"""ETag copies kept per caller: the server's own identity keeps `_ETAG_ENTRIES`, and 64 callers with as many
each would hold 64 times the answers."""
PER_PAGE_MAX = 100
"""The most items GitHub sends in one page of any list."""


def __getattr__(name: str) -> Any:
    # The retry policy moved to `transport` with PyGithub; it is still importable from here (the cross-server
    # fault tests read its bounds), and importing it here imports PyGithub only then.
    if name == "BoundedRetry":
        from mcp_server_github.transport import BoundedRetry

        return BoundedRetry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Response:
    status: int
    headers: dict[str, Any]
    data: Any
    text: str


@dataclass
class Page:
    items: list[Any]
    next_cursor: str | None
    data: Any


class _Identity:
    """What belongs to one GitHub identity (the server's token, or one caller's): its client and what was read
    with it. An ETag, a repository's name by id and a login seen with one token are never served to another."""

    def __init__(self, token: str | None, *, etag_entries: int = _ETAG_ENTRIES) -> None:
        self.token = token
        self.transport: Transport | None = None
        self.lock = threading.Lock()
        self.repository_names: dict[str, str] = {}
        self.etags: OrderedDict[str, tuple[str, Response]] = OrderedDict()
        self.etag_entries = etag_entries
        self.login: str | None = None

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class GitHubApi:
    """PyGithub's client, reached only through `request` so every call is checked, counted and translated.

    With `--upstream-identity single` every request carries the configured token. Otherwise each request carries
    the token of the caller being served (`caller_upstream_token`): one PyGithub client per caller, at most
    `CALLER_CLIENTS` of them, the least recently used closed first (a caller who comes back gets a new one); a
    request with no caller's token (none should reach here) is refused rather than sent as anyone else.
    """

    def __init__(self, settings: GitHubSettings) -> None:
        self.settings = settings
        self.api_url = settings.api_url.rstrip("/")
        self.allow: AllowList = settings.allow_list
        self.per_caller = settings.upstream_identity != "single"
        self.authenticated = self.per_caller or settings.token is not None
        self._origin = urlsplit(self.api_url)
        # Built on the first request: the server starts without PyGithub imported or a network call.
        own = None if self.per_caller else settings.token
        self._own = _Identity(own.get_secret_value() if own is not None else None)
        self._callers: OrderedDict[bytes, _Identity] = OrderedDict()
        self._callers_lock = threading.Lock()

    def close(self) -> None:
        with self._callers_lock:
            identities = [self._own, *self._callers.values()]
            self._callers.clear()
        for identity in identities:
            identity.close()

    def _identity(self) -> _Identity:
        if not self.per_caller:
            return self._own
        from mcp_server_core.auth.upstream import caller_upstream_token

        token = caller_upstream_token("github")
        if token is None:
            raise Refused(
                "This server acts on GitHub only as each caller, and this request carries no caller's GitHub token.",
                hint="Connect over HTTP with your GitHub token as the bearer (docs/identity.md).",
            )
        return self.identity_of(token)

    def identity_of(self, token: str) -> _Identity:
        """The caller's client state, made on first use; the least recently used one is closed past the bound."""
        key = hashlib.sha256(token.encode()).digest()
        evicted: list[_Identity] = []
        with self._callers_lock:
            identity = self._callers.get(key)
            if identity is None:
                identity = self._callers[key] = _Identity(token, etag_entries=CALLER_ETAG_ENTRIES)
                while len(self._callers) > min(CALLER_CLIENTS, self.settings.identity_cache_size):
                    evicted.append(self._callers.popitem(last=False)[1])
            self._callers.move_to_end(key)
        for old in evicted:
            old.close()
        return identity

    def transport(self, identity: _Identity | None = None) -> Transport:
        identity = identity or self._identity()
        with identity.lock:
            if identity.transport is None:
                from mcp_server_github.transport import Transport

                identity.transport = Transport(self.settings, self.api_url, self._origin, identity.token)
            return identity.transport

    def whois(self, token: str) -> UpstreamIdentity | None:
        """Who GitHub says `token` belongs to (`GET /user`, one request) and whether it may write; None when GitHub
        rejects it. Classic and OAuth-app tokens name their scopes (X-OAuth-Scopes): writing takes `repo` or
        `public_repo`. Fine-grained and GitHub App tokens send no such header and GitHub lists their permissions
        nowhere: their writes are offered, and GitHub's refusal names the permission missing
        (X-Accepted-GitHub-Permissions, in the tool's error)."""
        from fastmcp.server.auth import TokenVerificationError
        from mcp_server_core.auth.upstream import UpstreamIdentity

        try:
            with upstream_span("github", "GET /user"):
                status, headers, text = self.transport(self.identity_of(token)).send(
                    "GET", "/user", {}, {"Accept": "application/vnd.github+json"}, None, what="the caller's token"
                )
        except ToolFailure as exc:
            raise TokenVerificationError(str(exc)) from None
        if status == 401:
            return None
        data = _parse(text, headers)
        login = data.get("login") if isinstance(data, dict) else None
        if status != 200 or not isinstance(login, str):
            # A 403 here is a rate limit or an outage, not a verdict on the token: ask again next time.
            raise TokenVerificationError(f"GitHub answered GET /user with HTTP {status}")
        listed = {str(k).lower(): v for k, v in headers.items()}.get("x-oauth-scopes")
        if listed is None:
            return UpstreamIdentity(account=login, can_write=True)
        scopes = tuple(scope.strip() for scope in str(listed).split(",") if scope.strip())
        return UpstreamIdentity(account=login, can_write=bool({"repo", "public_repo"} & set(scopes)), scopes=scopes)

    def check_ready(self) -> None:
        """Readiness: GitHub answers and, with the server's own token, accepts it (/rate_limit costs no quota).
        Serving each caller as themselves, the server has no token of its own to check: /rate_limit anonymously."""
        if self.per_caller:  # the server's own identity is then anonymous
            status, headers, text = self.transport(self._own).send(
                "GET", "/rate_limit", {}, {"Accept": "application/vnd.github+json"}, None, what="readiness"
            )
            if status >= 400:
                raise failure(status, headers, _parse(text, headers), "readiness")
            return
        self.request("GET", "/user" if self.authenticated else "/rate_limit", what="readiness")

    # --- the allow-list: one check, before anything is sent ------------------------------------------------

    def check_path(self, path: str, params: Mapping[str, Any] | None) -> None:
        # A '..' in a repository name, path or ref could walk the URL to another repository's endpoint.
        if any(part in (".", "..") for part in path.split("?", 1)[0].split("/")):
            raise InvalidArgument(f"{path!r} holds a '.' or '..' segment.", hint="Name files and refs without them.")
        if not self.allow:
            return
        match = _REPO_PATH.match(path)
        if match:
            self.allow.check(match["owner"], match["repo"])
        elif _SEARCH.match(path):
            query = str((params or {}).get("q", ""))
            if self.allow.scope_search(query) != query:
                raise Refused("This search is not narrowed to the allow-list.", hint="Add repo: qualifiers.")
        elif not _UNSCOPED.match(path):
            raise Refused(f"{path} names no repository of this server's allow-list.")

    # --- requests --------------------------------------------------------------------------------------------

    def request(
        self,
        verb: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        accept: str | None = None,
        what: str | None = None,
        follow: bool = True,
        moved_from: str | None = None,
    ) -> Response:
        """One request; a failure becomes a `ToolFailure` saying what to do.

        A redirect within the API is followed once, whole: a read keeps its query, a write (307/308) is sent
        again with the same method and body, and the allow-list is checked against the new location first.
        Only a 2xx answer counts as done. With `follow=False` a redirect elsewhere (a signed download URL) comes
        back as it is, for the caller to fetch without the token.
        """
        what = what or f"{verb} {path}"
        self.check_path(path, params)
        identity = self._identity()
        if verb != "GET" and (repository := _REPO_PATH.match(path)):
            audit_target(f"github:{repository['owner']}/{repository['repo']}")  # a write's target, for its audit line
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        headers = {"Accept": accept or "application/vnd.github+json"}
        key = ""
        cached: tuple[str, Response] | None = None
        if verb == "GET":
            key = json.dumps([path, sorted(query.items()), headers["Accept"]])
            with identity.lock:
                cached = identity.etags.get(key)
            if cached is not None:
                # A 304 answer does not count against the primary rate limit.
                headers["If-None-Match"] = cached[0]
        status, response_headers, text = self._send(verb, path, query, headers, body, what=what)
        if status == 304 and cached is not None:
            # The copy sent with If-None-Match is current, even if another call evicted it meanwhile.
            return cached[1]
        data = _parse(text, response_headers)
        if status >= 400:
            raise failure(status, response_headers, data, what)
        if 200 <= status < 300 and status != 204:
            if accept is None or accept.endswith("json"):
                data = _github_json(verb, text, response_headers, what)
            elif "html" in str(response_headers.get("content-type", "")).lower():
                # A diff or raw file is never sent as a page: a portal's page would read as the file.
                raise not_github_json(verb, f"an HTML page where GitHub sends {accept}", what)
        response = Response(status, response_headers, data, text)
        if 300 <= status < 400:
            return self._redirected(verb, path, query, body, accept, what, response, follow, moved_from)
        etag = response_headers.get("etag")
        if key and etag and status == 200:
            with identity.lock:
                identity.etags[key] = (etag, response)
                identity.etags.move_to_end(key)
                while len(identity.etags) > identity.etag_entries:
                    identity.etags.popitem(last=False)
        return response

    def _send(
        self, verb: str, path: str, query: dict[str, Any], headers: dict[str, str], body: Any, *, what: str
    ) -> tuple[int, dict[str, Any], str]:
        transport = self.transport()
        with upstream_span("github", f"{verb} {path_template(path)}"):
            return transport.send(verb, path, query, headers, body, what=what)

    def _redirected(
        self,
        verb: str,
        path: str,
        query: dict[str, Any],
        body: Any,
        accept: str | None,
        what: str,
        response: Response,
        follow: bool,
        moved_from: str | None,
    ) -> Response:
        """What a 3xx answer means: followed once within the API, handed back, or said in words; never "done"."""
        answer = response.data if isinstance(response.data, dict) else {}
        # GitHub's documented redirect body carries the new URL too, for a client that lost the header.
        location = str(response.headers.get("location") or answer.get("url") or "")
        old = _REPO_PATH.match(moved_from or path)
        old_name = f"{old['owner']}/{old['repo']}" if old else path
        if not location:
            raise InvalidArgument(
                f"GitHub answered {what} with HTTP {response.status} (moved) without saying where;"
                + (" nothing was written." if verb != "GET" else " nothing was read."),
                hint=f"Find the new name of {old_name} (search_repositories) and use it."
                if old
                else "Check the name and path.",
            )
        target = self._api_location(location, what)
        if target is None:
            if not follow and verb == "GET":
                return response
            elsewhere = urlsplit(location).netloc or "no location"
            raise Unavailable(
                f"GitHub answered {what} with HTTP {response.status}, a redirect to {elsewhere} outside its API;"
                " it was not followed, so the token stays with GitHub"
                + ("; nothing was written." if verb != "GET" else "."),
                hint="Check the owner/name and path; if it persists, open the item on github.com.",
            )
        new_path, new_query = target
        new = _REPO_PATH.match(new_path)
        new_name = f"{new['owner']}/{new['repo']}" if new else new_path
        moved = f"{old_name} has moved to {new_name}" if old and new and old_name != new_name else None
        # A write is repeated only where GitHub asks for the same method again (307/308); once, never in a loop.
        repeatable = verb == "GET" or response.status in (307, 308)
        if moved_from is not None or not repeatable:
            raise InvalidArgument(
                f"{moved or f'GitHub redirected {what} (HTTP {response.status})'}; {what} was not done.",
                hint=f"Use the new name {new_name} and retry."
                if moved
                else "Retry once; if it persists, check the name.",
            )
        if new and not self.allow.allows(new["owner"], new["repo"]):
            raise Refused(
                f"{moved or f'GitHub redirected {what} to {new_name}'}, outside this server's allow-list"
                f" ({', '.join(self.allow.entries)}); nothing was sent there.",
                hint="Work within the listed repositories; the user can widen --repos if they mean to.",
            )
        if moved:
            logger.info("%s; following GitHub's redirect", moved)
            note_in_answer(f"({moved})")  # the answer says it once: the model learns the new name
        return self.request(
            verb,
            new_path,
            params={**query, **new_query},
            body=body,
            accept=accept,
            what=what,
            follow=follow,
            moved_from=moved_from or path,
        )

    def _api_location(self, location: str, what: str) -> tuple[str, dict[str, str]] | None:
        """The API path (a repository by name) and query a Location names, or None when it leads elsewhere."""
        parts = urlsplit(location)
        same_origin = not parts.netloc or (parts.scheme, parts.netloc) == (self._origin.scheme, self._origin.netloc)
        prefix = self._origin.path.rstrip("/")
        if not same_origin or not parts.path.startswith(prefix + "/"):
            return None
        path = parts.path[len(prefix) :]
        by_id = _REPO_BY_ID.match(path)
        if by_id:
            # GitHub names a renamed or transferred repository by id; its name is what the allow-list knows.
            name = self._repository_name(by_id["id"])
            if name is not None:
                path = f"/repos/{name}{by_id['rest'] or ''}"
            elif self.allow:
                raise Refused(
                    f"GitHub redirected {what} to repository id {by_id['id']} and would not name it; with an"
                    " allow-list, a repository without a name is not reached. Nothing was sent there.",
                    hint="Find the repository's new name (search_repositories) and use it if it is listed.",
                )
        return path, dict(parse_qsl(parts.query))

    def _repository_name(self, repository_id: str) -> str | None:
        """owner/name of a repository by id, or None. `/repositories/{id}` works on GitHub though its REST
        description leaves it out, so a server built from the description may not know it."""
        identity = self._identity()
        name = identity.repository_names.get(repository_id)
        if name is None:
            status, headers, text = self._send(
                "GET",
                f"/repositories/{repository_id}",
                {},
                {"Accept": "application/vnd.github+json"},
                None,
                what=f"repository {repository_id}",
            )
            data = _parse(text, headers)
            full_name = data.get("full_name") if isinstance(data, dict) and status == 200 else None
            if not isinstance(full_name, str) or not _REPO_PATH.match(f"/repos/{full_name}"):
                return None
            name = identity.repository_names[repository_id] = full_name
        return name

    def get(self, path: str, *, expect: type | tuple[type, ...] = dict, **kwargs: Any) -> Any:
        """GitHub's JSON answer, checked to be the `expect` type (an object unless told) before anyone reads it."""
        data = self.request("GET", path, **kwargs).data
        if not isinstance(data, expect):
            wanted = " or ".join(_JSON_KINDS[kind] for kind in (expect if isinstance(expect, tuple) else (expect,)))
            raise not_github_json("GET", f"{_json_kind(data)} where {wanted} belongs", kwargs.get("what") or path)
        return data

    def page(
        self,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        limit: int,
        cursor: str | None,
        scope: str,
        key: str | None = None,
        what: str | None = None,
        budget: int = PAGE_BYTES,
        weight: Callable[[Any], int] | None = None,
    ) -> Page:
        """One page of a list, with a cursor over GitHub's Link header (bound to this query and path).

        A page whose items would not fit `budget` (long comment bodies) ends early; its cursor then holds the
        same GitHub page and how many items were shown, and reading on asks for that page again (a 304 against
        the ETag, which costs no rate limit) and skips them. A `limit` above GitHub's 100 a page is read over
        several of its pages. `weight` is what one item costs as the tool shows it (its text and structure).
        """
        weight = weight or _weight
        scope = f"{path}\n{scope}"
        skip = 0
        if cursor:
            position = decode_cursor(cursor, scope=scope)
            query: dict[str, Any] = dict(position["q"])
            skip = int(position.get("skip", 0))
        else:
            # GitHub clamps per_page to 100 without saying so: ask for what it gives and page for the rest.
            query = {**(params or {}), "per_page": min(limit, PER_PAGE_MAX)}
        shown: list[Any] = []
        next_cursor: str | None = None
        first: Any = None
        used = 0
        while True:
            response = self.request("GET", path, params=query, what=what)
            if first is None:
                first = response.data
            items = response.data.get(key) if key and isinstance(response.data, dict) else response.data
            if not isinstance(items, list):
                # "Nothing found" would be a guess: GitHub sends a list here, even an empty one.
                where = f"no {key} list" if key else f"{_json_kind(response.data)} where a list belongs"
                raise not_github_json("GET", where, what or path)
            rest = items[skip:]
            costs = [weight(item) for item in rest[: limit - len(shown)]]
            taken = take_within_budget(costs, int, budget, spent=used)
            used += sum(costs[:taken])
            shown += rest[:taken]
            if taken < len(rest):
                next_cursor = encode_cursor({"q": query, "skip": skip + taken}, scope=scope)
                break
            following = _next_query(response.headers.get("link", ""))
            if following is None or len(shown) >= limit or used >= budget:
                next_cursor = encode_cursor({"q": following}, scope=scope) if following is not None else None
                break
            report_progress(len(shown), limit, f"{len(shown)} of up to {limit} read")
            query, skip = following, 0
        return Page(shown, next_cursor, first)

    @contextmanager
    def stream(
        self, path: str, *, params: Mapping[str, Any] | None = None, accept: str, what: str
    ) -> Iterator[Iterator[bytes]]:
        """A GET answered in chunks (see `Transport.stream`), checked against the allow-list like any request;
        GitHub's failure becomes a `ToolFailure`, and a redirect is reported rather than followed."""
        self.check_path(path, params)
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        with (
            upstream_span("github", f"GET {path_template(path)}"),
            self.transport().stream(path, query, {"Accept": accept}, what=what) as (status, headers, chunks),
        ):
            if status >= 300:
                text = b"".join(itertools.islice(chunks, 1))[:4_096].decode(errors="replace")
                if status < 400:
                    raise Unavailable(
                        f"GitHub redirected {what} (HTTP {status}).", hint="Read it again: the contents may have moved."
                    )
                raise failure(status, headers, _parse(text, headers), what)
            yield chunks

    def login(self) -> str:
        """The authenticated user's login, asked once per identity."""
        identity = self._identity()
        if identity.login is None:
            identity.login = str(self.get("/user", what="the authenticated user")["login"])
        return identity.login


# How GitHub's REST description names the values in the paths this server sends: a segment after one of these
# words is a value (an issue number, a run id); after the others the rest of the path is one value (a file path,
# a ref with slashes). Every other segment is a fixed word only if listed; anything else is a placeholder, so no
# value can reach a span's name.
_VALUE_AFTER = {
    "branches": "{branch}",
    "comments": "{comment_id}",
    "commits": "{ref}",
    "compare": "{basehead}",
    "issues": "{issue_number}",
    "jobs": "{job_id}",
    "pulls": "{pull_number}",
    "releases": "{release_id}",
    "repositories": "{repository_id}",
    "reviews": "{review_id}",
    "runs": "{run_id}",
    "trees": "{tree_sha}",
    "users": "{username}",
    "workflows": "{workflow_id}",
}
_REST_AFTER = {"contents": "{path}", "ref": "{ref}", "refs": "{ref}"}
_WORDS = frozenset(
    {*_VALUE_AFTER, *_REST_AFTER, "actions", "check-runs", "code", "files", "forks", "git", "labels", "logs"}
    | {"merge", "rate_limit", "repos", "search", "status", "tags", "user"}
)


def path_template(path: str) -> str:
    """The path as GitHub's REST description spells it (`/repos/{owner}/{repo}/issues/{issue_number}`): the
    operation a span is named for, never the values."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    out: list[str] = []
    if parts[:1] == ["repos"]:
        out, parts = ["repos", "{owner}", "{repo}"], parts[3:]
    for part in parts:
        previous = out[-1] if out else ""
        if previous in _REST_AFTER:
            out.append(_REST_AFTER[previous])
            break
        if previous in _VALUE_AFTER:
            out.append("{commit_sha}" if out[-2:-1] == ["git"] and previous == "commits" else _VALUE_AFTER[previous])
        else:
            out.append(part if part in _WORDS else "{value}")
    if out[-1:] == ["contents"]:
        out.append("{path}")  # the repository's root: the same operation with an empty path
    return "/" + "/".join(out)


def required(data: Any, *keys: str, what: str, applied: bool = False) -> Any:
    """A field GitHub documents in a successful answer, or a failure that says it is missing (not a KeyError)."""
    value = data
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if value is None:
        raise Unavailable(
            f"GitHub's answer to {what} lacks {'.'.join(keys)}"
            + ("; it may have been applied all the same." if applied else "."),
            hint="Check the current state before retrying, so nothing is done twice." if applied else "Retry shortly.",
        )
    return value


def _weight(item: Any) -> int:
    """What one listed item costs on the page: a line of fields, plus its body as far as it is shown."""
    if not isinstance(item, dict):
        return 100
    body = item.get("body")
    return 150 + min(len(body), 3_000) if isinstance(body, str) else 150


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return value


def _parse(text: str, headers: Mapping[str, Any]) -> Any:
    if not text:
        return None
    if "json" in str(headers.get("content-type", "")):
        try:
            return json.loads(text)
        except ValueError:
            return {"message": text[:500]}
    return text


def _github_json(verb: str, text: str, headers: Mapping[str, Any], what: str) -> Any:
    """A successful answer's JSON, or a failure saying it is not GitHub's: a captive portal's page, a body cut
    short by a proxy or an empty one must not read as an empty list or an item of unknown fields."""
    media = str(headers.get("content-type", "")).split(";", 1)[0].strip().lower()
    if not text:
        raise not_github_json(verb, "an empty body", what)
    if "json" not in media:
        raise not_github_json(verb, "an HTML page" if "html" in media else f"{media or 'untyped'} content", what)
    try:
        data = json.loads(text)
    except ValueError:
        raise not_github_json(verb, "JSON cut short or malformed", what) from None
    if not isinstance(data, dict | list):
        raise not_github_json(verb, _json_kind(data), what)
    return data


_JSON_KINDS: dict[type, str] = {dict: "an object", list: "a list", str: "a bare string", bool: "a bare true or false"}


def _json_kind(data: Any) -> str:
    return _JSON_KINDS.get(type(data), "a bare number" if isinstance(data, int | float) else "null")


def not_github_json(verb: str, found: str, what: str) -> Unavailable:
    """The failure for a 2xx answer GitHub did not write: retryable for a read, to be checked for a write."""
    message = f"GitHub's answer to {what} was not what GitHub sends ({found}); a proxy or a network sign-in page"
    if verb == "GET":
        return Unavailable(
            f"{message} may have answered in its place.",
            hint="Retry shortly; if it persists, check the network or GITHUB_API_URL.",
        )
    return Unavailable(
        f"{message} may have answered in its place; it may have been done.",
        hint="Read it back (the issue, comment, pull request, branch or file) to see whether it took effect"
        " before you retry.",
    )


def _next_query(link: str) -> dict[str, str] | None:
    """The query of the rel="next" link. Only its query is kept: the next request goes to the tool's own path
    (GitHub's links may name the repository by id), so neither a link nor a forged cursor can move it elsewhere.
    """
    for match in _LINK.finditer(link):
        if match["rel"] == "next":
            return dict(parse_qsl(urlsplit(match["url"]).query))
    return None


def failure(status: int, headers: Mapping[str, Any], data: Any, what: str) -> ToolFailure:
    """The family's failure type for one of GitHub's error responses, saying what to try instead."""
    body = data if isinstance(data, dict) else {}
    # GitHub's message can repeat what was asked (a ref, a path, a title): its one-line form, never lines of its own.
    message = one_line(str(body.get("message") or f"HTTP {status}"), 300).rstrip(".")
    details = _error_details(body)
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    from mcp_server_github.transport import rate_limit_wait

    wait = rate_limit_wait(lowered) if status in (403, 429) else None
    if wait is not None or (status in (403, 429) and "rate limit" in message.lower()):
        # A secondary limit says so in its message, and may also carry remaining 0 and the reset to wait for.
        secondary = "secondary rate limit" in message.lower()
        if lowered.get("x-ratelimit-remaining") == "0" and "retry-after" not in lowered and not secondary:
            reset = lowered.get("x-ratelimit-reset", "")
            when = datetime.fromtimestamp(int(reset), UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if reset.isdigit() else "?"
            return RateLimited(
                f"GitHub's rate limit of {lowered.get('x-ratelimit-limit', '?')} requests an hour is used up;"
                f" it resets at {when}.",
                retry_after=wait,
                hint=f"Retry after {wait or 60:.0f} s, or do something else until then.",
            )
        return RateLimited(
            f"GitHub's secondary rate limit stopped {what}: too many requests too quickly.",
            retry_after=wait or 60.0,
            hint=f"Retry after {wait or 60:.0f} s, one request at a time.",
        )
    if status == 401:
        return Refused(
            f"GitHub rejected the credentials ({message}).",
            hint="Set GITHUB_TOKEN to a valid token and restart the server; retrying will not help.",
        )
    if status == 403:
        needs = lowered.get("x-accepted-github-permissions") or lowered.get("x-accepted-oauth-scopes")
        return Refused(
            f"GitHub refused {what}: {message}{details}.",
            hint=(f"The token needs: {needs}." if needs else "The token may lack the permission.")
            + " Do not retry unchanged; ask the user for a token that has it.",
        )
    if status == 404:
        return NotFound(
            f"{what} was not found (or the token cannot see it: GitHub answers 404 for private repositories).",
            hint="Check the owner/name, number, branch or path; list them first if unsure.",
        )
    if status in (409, 405):
        return Conflict(
            f"GitHub refused {what}: {message}{details}.", hint="Fetch the current state and try again from it."
        )
    if status == 422:
        return InvalidArgument(
            f"GitHub rejected {what}: {message}{details}.", hint="Fix the arguments named above and retry."
        )
    if status >= 500:
        return Unavailable(f"GitHub failed on {what} (HTTP {status}).", hint="Retry in a minute.")
    return InvalidArgument(f"GitHub answered {what} with HTTP {status}: {message}{details}.")


def _error_details(body: Mapping[str, Any]) -> str:
    errors = body.get("errors")
    if not isinstance(errors, list) or not errors:
        return ""
    parts = []
    for error in errors[:5]:
        if isinstance(error, dict):
            text = error.get("message") or " ".join(
                str(error[k]) for k in ("resource", "field", "code") if error.get(k) is not None
            )
            parts.append(one_line(str(text)))
        else:
            parts.append(one_line(str(error)))
    return " (" + "; ".join(parts) + ")"
