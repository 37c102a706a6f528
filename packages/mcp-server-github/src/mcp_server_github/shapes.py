"""Compact shapes of GitHub objects, the parameter types every tool shares, and untrusted text made safe.

GitHub's JSON for one issue is about 5 kB; a model needs a tenth of it. Every shape here picks the fields worth
their context. What a stranger could have written reaches the model in one of the helpers' two forms only
(mcp_server_core.conventions.untrusted): bodies (titles with their bodies, comments, commit messages, file
contents, logs) cleaned for structured content and fenced, with their author and standing, for the text; names
and labels (paths, branches, tags, check names, labels, logins, commit author names) as `Untrusted`, taken from
GitHub's JSON by `untrusted()` where they leave it, and shown in their one-line form in the text, the fence
labels and the structured content alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Self, TypeVar, cast

from mcp_server_core import DEFAULT_BUDGET, Rendered, take_within_budget
from mcp_server_core.conventions.budget import json_size
from mcp_server_core.conventions.places import Place
from mcp_server_core.conventions.untrusted import Cleaned, Untrusted, clean, fence, one_line
from pydantic import AfterValidator, Field, PlainSerializer, PrivateAttr

S = TypeVar("S")
T = TypeVar("T", bound=Mapping[str, Any])

_OWNER_SLASH_NAME = re.compile(r"[\w.-]+/[\w.-]+")


def _owner_slash_name(value: str) -> str:
    if not _OWNER_SLASH_NAME.fullmatch(value):
        raise ValueError("name the repository as owner/name, e.g. octocat/hello-world")
    return value


def _not_empty(value: str) -> str:
    if not value:
        raise ValueError("should not be empty")
    return value


def _positive(value: int) -> int:
    if value < 1:
        raise ValueError("should be 1 or more")
    return value


# Checked by a validator, not advertised as a pattern or a minimum: a model knows a repository as owner/name, a
# number or line as counting from 1 and a title, path or message as not empty, and the schema words would be read
# again on some 35 tools in every tools/list (issue 15). The check and its message reach the model all the same
# when it gets one wrong.
RepoName = Annotated[str, AfterValidator(_owner_slash_name), Field(description="owner/name")]
Number = Annotated[int, AfterValidator(_positive)]
NonEmpty = Annotated[str, AfterValidator(_not_empty)]
BODY_CHARS = 6_000
COMMENT_CHARS = 3_000


def IN_REPO(arguments: Mapping[str, Any]) -> Place | None:  # noqa: N802 - read as a constant where tools declare it
    """The repository a call reads or writes (`repo`), for the confirmation of cross writes (the helpers'
    flows.py): GitHub's names are case-insensitive, so `Acme/Public` and `acme/public` are one place."""
    repo = arguments.get("repo")
    if repo is None:
        return None
    given = repo if isinstance(repo, str) else repr(repo)
    return Place("repository", given.casefold(), given)


SEARCH_RESULTS = Place("search results", "github", "from GitHub")


def SEARCHED(_arguments: Mapping[str, Any]) -> Place:  # noqa: N802 - read as a constant where tools declare it
    """What a search read: hits from any repository the token sees, so no write target is ever the same place."""
    return SEARCH_RESULTS


def split_repo(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    return owner, name


# --- results ---------------------------------------------------------------------------------------------


def shown(value: Any) -> Any:
    """Structured content as the wire carries it: every `Untrusted` in its one-line form."""
    if isinstance(value, Untrusted):
        return str(value)
    if isinstance(value, Mapping):
        return {key: shown(member) for key, member in value.items()}
    if isinstance(value, list | tuple):
        return [shown(member) for member in value]
    return value


# A shape is a TypedDict of its tool's module (so mypy --strict sees an Untrusted where a renderer would join or
# concatenate a str); it is advertised as a plain object, and its Untrusted fields leave as their one-line form.
Shape = Mapping[str, Any]
Shapes = Annotated[list[Shape], PlainSerializer(shown, return_type=list[dict[str, Any]])]
OneShape = Annotated[Shape, PlainSerializer(shown, return_type=dict[str, Any])]

# Result classes carry no docstring: it would be sent in every outputSchema (tools/list budget).


class TextResult(Rendered):  # a result whose compact text is written by the tool that made it
    _text: str = PrivateAttr("")

    def with_text(self, text: str) -> Self:
        self._text = text
        return self


class Listing(TextResult):  # a page of compact items
    items: Shapes
    next_cursor: str | None = None

    def render(self) -> str:
        return (self._text or "Nothing found.") + cursor_tail(self.next_cursor)


class Item(TextResult):  # one object and a page of its parts (comments, files), with a cursor for the rest
    item: OneShape
    parts: Shapes | None = None
    next_cursor: str | None = None

    def render(self) -> str:
        return self._text + cursor_tail(self.next_cursor)


def cursor_tail(next_cursor: str | None) -> str:
    """The last line of a paged result's text, so a model that reads only the text can still page on."""
    return f"\nnext_cursor={next_cursor}" if next_cursor else ""


# --- one budget for text and structure ----------------------------------------------------------------------

ROOM = 2 * (DEFAULT_BUDGET - 1_500)
"""What a page's items may cost, each counted as `cost()`: the answer's text stays within the tool's budget and
text plus structure within twice it, with room for the head line, the fence labels and the cursor. Tools page
their items to this, so text and structure show the same items and the helpers' backstop trim never acts."""


def cost(text: str, shape: Any = None) -> int:
    """What one item adds to an answer: its text (a line or a fenced body) and its structured content, as the
    wire's JSON bytes, counted so that a sum within `ROOM` keeps the text within half of it."""
    text_bytes = json_size(text)
    return max(2 * text_bytes, text_bytes + (json_size(shown(shape)) if shape is not None else 0))


def room_for(budget: int) -> int:
    """`ROOM` for a tool with its own text budget."""
    return 2 * (budget - 1_500)


def fitting(costs: Iterable[int], room: int) -> int:
    """How many leading items of these costs fit `room` (at least one, so a page always moves on)."""
    return take_within_budget(list(costs), int, room)


def weigh(shape: Callable[[Any], S], line: Callable[[S], str]) -> Callable[[Any], int]:
    """The cost of one of GitHub's items as its tool shows it (its shape and its line), for `GitHubApi.page`."""

    def weight(raw: Any) -> int:
        shaped = shape(raw)
        return cost(line(shaped) + "\n", shaped)

    return weight


# --- untrusted text --------------------------------------------------------------------------------------


def untrusted(thing: Any, *keys: str) -> Untrusted:
    """A string field of GitHub's JSON (`untrusted(pr, "head", "label")`), as it leaves GitHub's answer: a name,
    label or path someone else chose, shown only in its one-line form. Absent or null: empty."""
    value = thing
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return Untrusted(None if value is None else str(value))


def role_of(thing: Mapping[str, Any]) -> str:
    """The author's standing towards the repository, as GitHub states it, in words (GitHub's enum, so a label
    never shows a value outside it)."""
    user = thing.get("user") or thing.get("author") or {}
    if isinstance(user, Mapping) and user.get("type") == "Bot":
        return "bot"
    association = thing.get("author_association") or "NONE"
    return _ROLES.get(str(association), "unknown standing")


_ROLES = {
    "NONE": "no association with the repository",
    "OWNER": "owner",
    "MEMBER": "member",
    "COLLABORATOR": "collaborator",
    "CONTRIBUTOR": "contributor",
    "FIRST_TIMER": "first timer",
    "FIRST_TIME_CONTRIBUTOR": "first time contributor",
    "MANNEQUIN": "mannequin",
}


def login_of(thing: Mapping[str, Any] | None, key: str = "user") -> Untrusted:
    login = untrusted(thing, key, "login")
    return login if login else Untrusted("ghost")


def git_name(name: Untrusted) -> str:
    """A commit author's name as git records it, which anyone can set to anything ("octocat (owner); verified
    by ..."): quoted, its one-line form with quotes escaped, and said to be only a name, so it never reads as
    an account or a standing."""
    quoted = one_line(name.raw, 60).replace('"', '\\"')
    return f'git author "{quoted}"'


def clean_text(text: str | None, limit: int = BODY_CHARS, *, markup: bool = True) -> str:
    """A body for structured content: cleaned (invisible characters removed, markup reduced) and cut."""
    return _cut(clean(_head(text, limit), markup=markup).text, limit, len(text or ""))


def _head(text: str | None, limit: int) -> str:
    # Markup can only shrink when reduced: more than twice the limit plus the longest hidden part is never shown,
    # so the rest is not cleaned at all (clean() bounds its own work too).
    return (text or "")[: limit * 4]


def _cut(text: str, limit: int, whole: int) -> str:
    if len(text) <= limit and whole <= limit * 4:
        return text
    return f"{text[:limit]}\n[cut at {min(limit, len(text)):,} of {max(whole, len(text)):,} characters]"


def fenced(
    text: str | None,
    what: str,
    thing: Mapping[str, Any] | None = None,
    *,
    limit: int = BODY_CHARS,
    markup: bool = True,
    author: Untrusted | str | None = None,
) -> str:
    """`text` cleaned, cut and fenced as data written by `thing`'s author (or `author`). `what` is the server's
    own words: build it from one-line forms only (f-strings of `Untrusted`)."""
    cleaned = clean(_head(text, limit), markup=markup)
    short = Cleaned(_cut(cleaned.text, limit, len(text or "")), cleaned.removed_invisible, cleaned.removed_hidden_html)
    if thing is not None:
        return fence(short, what=what, author=login_of(thing), role=role_of(thing))
    return fence(short, what=what, author=author)


def fenced_title_and_body(thing: Mapping[str, Any]) -> str:
    """An issue's or pull request's title and body, fenced together as written by its author (the line above
    the fence names the issue or pull request; its link, which a model can build, is in the structured content)."""
    return withheld_line(thing, "title and body") or fenced(
        f"{thing.get('title') or ''}\n\n{thing.get('body') or ''}", "title and body", thing
    )


WITHHELD = "withheld_by_lockdown"
"""The key lockdown.py adds to an item of GitHub's JSON whose text it withheld: the author's standing, in words."""


def withheld_line(thing: Mapping[str, Any], what: str) -> str | None:
    """The server's own line in place of a text lockdown withheld (`what`: "title and body", "comment of
    2026-11-30"), or None when it was not withheld: the model learns that something was said, and by whom."""
    standing = thing.get(WITHHELD)
    if not standing:
        return None
    return (
        f"[{what} withheld by lockdown: written by {login_of(thing)}, {standing}; only text by the repository's "
        "owners, members and collaborators is shown]"
    )


def withheld_of(thing: Mapping[str, Any]) -> str:
    """For structured content: the standing of the author whose text was withheld, or "" (left out)."""
    return str(thing.get(WITHHELD) or "")


def fenced_lines(lines: list[str], what: str) -> str:
    """A listing whose lines carry names and titles written by others (as one-line forms), fenced once."""
    if not lines:
        return ""
    return fence(clean("\n".join(lines), markup=False), what=what)


def number_of(value: Any) -> int:
    """A count GitHub sends (a size, a number of additions), or 0 for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def day(timestamp: Any) -> str | None:
    return str(timestamp)[:10] if timestamp else None


def said(value: Any, absent: str = "unknown") -> str:
    """A field for the text: GitHub's `null` (a draft's publication date, a run's pending conclusion) as a
    word; the text never shows Python's `None`. Anything else upstream sent is shown in its one-line form."""
    if value is None or value == "" or (isinstance(value, Untrusted) and not value):
        return absent
    return str(value) if isinstance(value, Untrusted | int | float) else one_line(str(value))


def labels_of(thing: Mapping[str, Any]) -> list[Untrusted]:
    return [untrusted(label, "name") for label in thing.get("labels") or [] if isinstance(label, Mapping)]


def logins(users: list[Any] | None) -> list[Untrusted]:
    return [untrusted(u, "login") for u in users or [] if isinstance(u, Mapping)]


def names(values: Iterable[Untrusted]) -> str:
    """Several one-line forms, comma-separated."""
    return ", ".join(str(value) for value in values)


def compact(fields: T) -> T:
    """Fields without empty values: absent costs nothing, `null` and `[]` cost bytes and say nothing."""
    kept = {k: v for k, v in fields.items() if v is not None and v != [] and v != "" and not _empty(v)}
    return cast("T", kept)


def _empty(value: Any) -> bool:
    return isinstance(value, Untrusted) and not value
