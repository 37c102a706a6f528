"""The repository allow-list, checked in one place (`GitHubApi.request`) before any request leaves.

A prompt injection in one public issue can ask the agent to read a private repository or push elsewhere; with
`--repos` set, every request naming a repository outside the list is refused before it is sent, and searches
are narrowed to the listed repositories.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mcp_server_core.conventions.errors import Refused

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_REPO = r"[A-Za-z0-9._-]{1,100}"
_PATTERN = re.compile(rf"^(?P<owner>{_NAME})/(?P<repo>{_REPO}|\*)$")
# Qualifiers in a search query that widen or pick its scope.
_SCOPE_QUALIFIER = re.compile(r"(?i)(?:^|\s)(-?)(repo|org|user|owner):(\"[^\"]*\"|\S+)")


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

    def search_qualifiers(self) -> str:
        """Qualifiers that keep a search inside the list (several repo:/user: qualifiers are ORed by GitHub)."""
        return " ".join([*(f"repo:{r}" for r in sorted(self.repos)), *(f"user:{o}" for o in sorted(self.owners))])

    def scope_search(self, query: str) -> str:
        """The query narrowed to the list: its own scope qualifiers must all be allowed; none means all listed."""
        if not self:
            return query
        named = [(neg, kind.lower(), value.strip('"')) for neg, kind, value in _SCOPE_QUALIFIER.findall(query)]
        positive = [(kind, value) for neg, kind, value in named if not neg]
        for kind, value in positive:
            if kind == "repo":
                owner, _, name = value.partition("/")
                self.check(owner, name)
            elif value.lower() not in self.owners:
                raise Refused(
                    f"Searching {kind}:{value} reaches outside this server's allow-list ({', '.join(self.entries)}).",
                    hint="Search with repo: qualifiers naming listed repositories, or with none to search them all.",
                )
        if positive:
            return query
        return f"{query} {self.search_qualifiers()}".strip()
