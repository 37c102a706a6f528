"""The repository allow-list, checked in one place (`GitHubApi.request`) before any request leaves.

A prompt injection in one public issue can ask the agent to read a private repository or push elsewhere; with
`--repos` set, every request naming a repository outside the list is refused before it is sent, and searches
are narrowed to the listed repositories.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_server_core.conventions.errors import InvalidArgument, Refused

from mcp_server_github.search_syntax import split_scope

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_REPO = r"[A-Za-z0-9._-]{1,100}"
_PATTERN = re.compile(rf"^(?P<owner>{_NAME})/(?P<repo>{_REPO}|\*)$")
# What a scope qualifier may name: owner/name or an account (quotes and spaces never reach the query sent).
_SCOPE_VALUE = re.compile(rf"^{_NAME}(?:/(?P<repo>{_REPO}))?$")


class AllowList:
    """`owner/name` and `owner/*` entries; GitHub compares names without regard to case, and so does this."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.repos: set[str] = set()
        self.owners: set[str] = set()
        self.entries: list[str] = []
        for entry in entries:
            match = _PATTERN.match(entry)
            if match is None:
                raise ValueError(f"repos: {entry!r} is not owner/name or owner/*")
            self.entries.append(entry)
            if match["repo"] == "*":
                self.owners.add(match["owner"].lower())
            else:
                self.repos.add(entry.lower())

    def __bool__(self) -> bool:
        return bool(self.entries)

    def allows(self, owner: str, repo: str) -> bool:
        if not self:
            return True
        return owner.lower() in self.owners or f"{owner}/{repo}".lower() in self.repos

    def check(self, owner: str, repo: str) -> None:
        if not self.allows(owner, repo):
            raise Refused(
                f"Repository {owner}/{repo} is outside this server's allow-list ({', '.join(self.entries)}).",
                hint="Work within the listed repositories; the user can widen --repos if they mean to.",
            )

    def search_qualifiers(self) -> list[str]:
        """Qualifiers that keep a search inside the list (several repo:/user: qualifiers are ORed by GitHub)."""
        return [*(f"repo:{r}" for r in sorted(self.repos)), *(f"user:{o}" for o in sorted(self.owners))]

    def scope_search(self, query: str) -> str:
        """The query GitHub is sent: what it searches for, then a scope the server built from the list.

        The query's own scope qualifiers are taken out and judged: each it names must be inside the list (it then
        narrows the search to those), each it excludes is kept as an exclusion. With none named, the whole list
        is the scope. `OR` is refused: whether a scope added beside it binds every alternative depends on how
        GitHub groups the query, which differs between its search types. Applied to its own answer, this gives
        that answer back unchanged (the check before sending relies on it).
        """
        if not self:
            return query
        parsed = split_scope(query)
        if parsed.has_or:
            raise Refused(
                "With an allow-list, a search cannot use OR: the scope added to keep it inside the list might bind"
                " only one of the alternatives.",
                hint="Search for each alternative in its own call.",
            )
        named: list[str] = []
        excluded: list[str] = []
        for scope in parsed.scopes:
            kind = "repo" if scope.key in ("repo", "repository") else "user"
            match = _SCOPE_VALUE.match(scope.value)
            if match is None or bool(match["repo"]) != (kind == "repo"):
                raise InvalidArgument(
                    f"{scope.key}:{scope.value!r} names no {'repository' if kind == 'repo' else 'account'}.",
                    hint="Write repo:owner/name, or user:login for an account's repositories.",
                )
            qualifier = f"{kind}:{scope.value}"
            if scope.excluded:
                excluded.append(f"-{qualifier}")
            elif qualifier.startswith("repo:"):
                owner, _, name = scope.value.partition("/")
                self.check(owner, name)
                named.append(qualifier)
            elif scope.value.lower() in self.owners:
                named.append(qualifier)
            else:
                raise Refused(
                    f"Searching {scope.key}:{scope.value} reaches outside this server's allow-list"
                    f" ({', '.join(self.entries)}).",
                    hint="Search with repo: qualifiers naming listed repositories, or with none to search them all.",
                )
        chosen = list(dict.fromkeys(named)) or self.search_qualifiers()
        return " ".join([part for part in (parsed.rest, *dict.fromkeys(excluded), *chosen) if part])
