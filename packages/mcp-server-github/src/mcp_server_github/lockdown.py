"""Lockdown (`--lockdown`): in a public repository, what people without push access wrote is withheld.

Against the known attack on agents that read GitHub: anyone may open an issue or comment in a public repository,
and its text can tell the agent to do something else (copy a private repository out, push a change). With
lockdown on, the titles and bodies of issues, pull requests, comments, reviews and review comments by such
authors never reach the model: the answer says the text was withheld and who wrote it, with their standing.
Private repositories are not affected: everyone who can write there was let in by its owners.

Who counts as trusted. GitHub's own server (github-mcp-server, `--lockdown-mode`) asks GitHub for each author's
permission on the repository and shows only what authors with push access wrote. We read GitHub's
`author_association`, which every issue, pull request, comment, review and review comment carries: OWNER, MEMBER
and COLLABORATOR are trusted; CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, MANNEQUIN and NONE are not. Why:
it costs no request (a permission lookup per author would be one request per distinct author on every page, and
needs a token allowed to read collaborators, which a fine-grained read-only token often is not), and it is the
field GitHub itself labels authors with in its web pages. What it gives up: MEMBER is any member of the owning
organization, and COLLABORATOR may be an outside collaborator with read or triage access only; both are people
the repository's owners let in, so the attacker this mode is against (a stranger) stays out either way. A value
GitHub adds later is not trusted until it is added here.

Whether a repository is public is asked once per repository (`GET /repos/{repo}`) and kept `VISIBILITY_TTL_S`;
if GitHub does not say, the repository is taken to be public (withholding is the safe mistake).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from mcp_server_core import ToolFailure

from mcp_server_github.client import GitHubApi
from mcp_server_github.shapes import WITHHELD

__all__ = ["TRUSTED", "Lockdown"]

TRUSTED = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""GitHub's `author_association` values that show a text under lockdown."""

VISIBILITY_TTL_S = 300.0
MAX_REPOSITORIES = 1_024

_STANDING = {
    "NONE": "no association with the repository",
    "CONTRIBUTOR": "a contributor without push access",
    "FIRST_TIMER": "a first-time GitHub user",
    "FIRST_TIME_CONTRIBUTOR": "a first-time contributor",
    "MANNEQUIN": "an imported placeholder account",
}


class Lockdown:
    """The lockdown of one server: on or off (`--lockdown`), and which repositories are public."""

    def __init__(self, api: GitHubApi, *, enabled: bool) -> None:
        self.api = api
        self.enabled = enabled
        self._public: OrderedDict[str, tuple[bool, float]] = OrderedDict()
        self._lock = threading.Lock()

    def scrub(self, thing: Any, repo: str) -> Any:
        """`thing` (an issue, pull request, comment, review or review comment as GitHub sends it) as the tool may
        show it: unchanged, or without its title and body and with `WITHHELD` saying who wrote it."""
        if not self.enabled or not isinstance(thing, Mapping):
            return thing
        association = str(thing.get("author_association") or "NONE")
        if association in TRUSTED or not self.is_public(repo):
            return thing
        return {
            **thing,
            "title": None,
            "body": None,
            WITHHELD: _STANDING.get(association, "an author GitHub gives no push-access standing"),
        }

    def scrub_run(self, run: Any, repo: str) -> Any:
        """A workflow run as the tool may show it: a run of a pull request from a fork carries that pull request's
        title (`display_title`), which anyone may write and no `author_association` vouches for: withheld."""
        if not self.enabled or not isinstance(run, Mapping):
            return run
        head = run.get("head_repository")
        base = run.get("repository")
        head_name = head.get("full_name") if isinstance(head, Mapping) else None
        base_name = base.get("full_name") if isinstance(base, Mapping) else repo
        if head_name is not None and str(head_name).casefold() == str(base_name).casefold():
            return run
        if not self.is_public(repo):
            return run
        return {**run, "display_title": None, WITHHELD: "the author of a pull request from another repository"}

    def scrub_all(self, things: list[Any], repo: str) -> list[Any]:
        return [self.scrub(thing, repo) for thing in things]

    def is_public(self, repo: str) -> bool:
        key = repo.casefold()
        now = time.monotonic()
        with self._lock:
            known = self._public.get(key)
            if known is not None and known[1] > now:
                self._public.move_to_end(key)
                return known[0]
        try:
            data = self.api.get(f"/repos/{repo}", what=f"whether {repo} is public (lockdown)")
            public = data.get("private") is not True
        except ToolFailure:
            return True  # unknown: withhold, and ask again next time
        with self._lock:
            self._public[key] = (public, now + VISIBILITY_TTL_S)
            while len(self._public) > MAX_REPOSITORIES:
                self._public.popitem(last=False)
        return public
