"""GitHub's search query syntax, read far enough to know which repositories a query reaches.

GitHub reads a query as terms, quoted phrases, `key:value` qualifiers (a value may be quoted), `-` or `NOT`
before a term to exclude it, `AND` / `OR` between terms and parentheses to group them. A scope qualifier
(`repo:`, `user:`, `org:`, `owner:`) decides which repositories are searched, and where it stands in that
structure decides what it means: `x repo:a OR (repo:b)` reaches repository b. So with an allow-list the server
does not pass the model's scope on; it keeps the rest of the query and adds a scope it built itself.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from mcp_server_core import InvalidArgument

SCOPE_KEYS = frozenset({"repo", "repository", "user", "org", "organization", "owner"})
# Any spelling GitHub could read as a scope qualifier, wherever it stands (in a phrase, a group, before a space
# and a colon): each must be one a standalone qualifier at the top level accounts for, or the query is refused.
_SCOPE_ANYWHERE = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:" + "|".join(sorted(SCOPE_KEYS)) + r")\s*:")
_QUALIFIER = re.compile(r"^(?P<negated>-?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]*):(?P<value>.+)$", re.DOTALL)
# GitHub documents its operators in capitals; read in any case here, so a search type that takes `or` and `not`
# as operators cannot turn a scope the server added into an alternative or an exclusion.
_INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cn"})


@dataclass
class Scope:
    """One scope qualifier as the query named it."""

    key: str
    value: str
    excluded: bool


@dataclass
class ScopedQuery:
    """A query split into what it searches for (`rest`, as written) and the scope qualifiers it named."""

    rest: str = ""
    scopes: list[Scope] = field(default_factory=list)
    has_or: bool = False


@dataclass
class Token:
    text: str
    depth: int  # how many parentheses it stands in
    start: int
    end: int


def tokens(query: str) -> list[Token]:
    """Each token of the query where it stands; a phrase or a quoted value stays whole."""
    out: list[Token] = []
    depth = 0
    i, n = 0, len(query)
    while i < n:
        char = query[i]
        if char.isspace():
            i += 1
        elif char == "(":
            out.append(Token("(", depth, i, i + 1))
            depth += 1
            i += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise InvalidArgument("The query closes a parenthesis it never opened.", hint="Balance ( and ).")
            out.append(Token(")", depth, i, i + 1))
            i += 1
        else:
            start = i
            while i < n and not query[i].isspace() and query[i] not in "()":
                if query[i] == '"':
                    end = query.find('"', i + 1)
                    if end < 0:
                        raise InvalidArgument("The query opens a quote it never closes.", hint='Close every ".')
                    i = end + 1
                else:
                    i += 1
            out.append(Token(query[start:i], depth, start, i))
    if depth:
        raise InvalidArgument("The query opens a parenthesis it never closes.", hint="Balance ( and ).")
    return out


def split_scope(query: str) -> ScopedQuery:
    """The query's scope qualifiers, taken out of it; refused unless each stands alone at the top level.

    A scope qualifier inside parentheses, inside a phrase or twice negated would change what the query reaches
    depending on how GitHub groups it; there is no need for one there, since several `repo:` qualifiers at the
    top level already mean any of those repositories.
    """
    if any(unicodedata.category(char) in _INVISIBLE and not char.isspace() for char in query):
        # A character GitHub may read as a separator (or not) where this reading does not.
        raise InvalidArgument("The query holds invisible or control characters.", hint="Write it in plain text.")
    parsed = ScopedQuery()
    kept: list[Token] = []
    pending: Token | None = None  # a top-level NOT, held until we see whether it negates a scope qualifier
    for item in tokens(query):
        word, depth = item.text, item.depth
        parsed.has_or = parsed.has_or or word.upper() == "OR"
        match = _QUALIFIER.match(word)
        scope = match is not None and match["key"].lower() in SCOPE_KEYS and depth == 0
        if pending is not None and not scope:
            kept.append(pending)
        if scope and match is not None:
            if pending is not None and match["negated"]:
                raise InvalidArgument(
                    f"NOT {word} negates a scope twice.", hint="Write an excluded scope as -repo:owner/name."
                )
            parsed.scopes.append(
                Scope(
                    match["key"].lower(),
                    match["value"].strip('"'),
                    excluded=bool(match["negated"]) or pending is not None,
                )
            )
            pending = None
        elif word.upper() == "NOT" and depth == 0:
            pending = item
        else:
            pending = None
            kept.append(item)
    if pending is not None or (kept and kept[-1].text.upper() in ("NOT", "-")):
        # A scope added after it would be negated: the search would reach everything outside the list.
        raise InvalidArgument("The query ends with a negation.", hint="Say what it excludes, or leave it out.")
    # What is left, spaced as written: a token that touched its neighbour (a parenthesis) still does.
    parsed.rest = "".join(
        ("" if n == 0 or kept[n - 1].end == item.start else " ") + item.text for n, item in enumerate(kept)
    )
    if len(_SCOPE_ANYWHERE.findall(query)) != len(parsed.scopes):
        raise InvalidArgument(
            "A repo:, user:, org: or owner: qualifier in this query stands inside parentheses, a phrase or"
            " another word; with an allow-list only standalone scope qualifiers at the top level are accepted.",
            hint="Put each repo: qualifier on its own, outside parentheses (several mean any of them).",
        )
    return parsed
