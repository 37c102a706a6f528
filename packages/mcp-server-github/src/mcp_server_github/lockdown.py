"""Lockdown (`--lockdown`): in a public repository, what people without push access wrote is withheld.

Against the known attack on agents that read GitHub: anyone may open an issue or comment in a public repository,
and its text can tell the agent to do something else (copy a private repository out, push a change). With
lockdown on, the titles and bodies of issues, pull requests, comments, reviews and review comments by such
authors, and the logs of the workflow runs of pull requests from forks, never reach the model: the answer says
the text was withheld and who wrote it, with their standing.
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

Workflow runs have no `author_association`. A run of a pull request from another repository (its head repository
is not the base: `from_elsewhere`) ran the commands and the workflow file of that head, which its author wrote,
so its title (the pull request's), its jobs' logs and its job and step names are withheld whoever the author is:
a run carries no `author_association` of its pull request (GitHub leaves a fork's run's `pull_requests` empty),
and a fork's pull request by a collaborator is rare enough that finding it is not worth a search per run.
Which run a job belongs to and where a run came from are asked once each (`GET .../actions/jobs/{id}`,
`GET .../actions/runs/{id}`) and kept, at most `MAX_RUNS` of each: neither ever changes.

Whether a repository is public is asked once per repository (`GET /repos/{repo}`) and kept `VISIBILITY_TTL_S`;
if GitHub does not say, the repository is taken to be public (withholding is the safe mistake).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from mcp_server_core import ToolFailure

from mcp_server_github.client import GitHubApi
from mcp_server_github.shapes import WITHHELD

__all__ = ["FROM_ELSEWHERE", "TRUSTED", "Lockdown", "from_elsewhere"]

TRUSTED = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""GitHub's `author_association` values that show a text under lockdown."""

VISIBILITY_TTL_S = 300.0
MAX_REPOSITORIES = 1_024
MAX_RUNS = 4_096
"""Runs (and, apart, jobs) whose origin is kept: a few dozen bytes each."""

K = TypeVar("K")
V = TypeVar("V")

FROM_ELSEWHERE = "the author of a pull request from another repository"

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
        self._public: _Recent[str, tuple[bool, float]] = _Recent(MAX_REPOSITORIES)
        self._runs: _Recent[tuple[str, int], bool] = _Recent(MAX_RUNS)
        self._jobs: _Recent[tuple[str, int], int] = _Recent(MAX_RUNS)

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
        if not from_elsewhere(run, repo) or not self.is_public(repo):
            return run
        return {**run, "display_title": None, WITHHELD: FROM_ELSEWHERE}

    def run_withheld(self, repo: str, run_id: int) -> bool:
        """Whether what run `run_id` printed and named (its jobs' logs, job and step names) is withheld: lockdown
        is on, the repository is public, and the run is of a pull request from another repository, whose head
        (workflow file included) its author wrote. A failure to ask GitHub is the tool's failure: nothing shown."""
        if not self.enabled or not self.is_public(repo):
            return False
        key = (repo.casefold(), run_id)
        known = self._runs.get(key)
        if known is not None:
            return known
        run = self.api.get(f"/repos/{repo}/actions/runs/{run_id}", what=f"where run {run_id} came from (lockdown)")
        elsewhere = from_elsewhere(run, repo)
        self._runs.put(key, elsewhere)  # a run's head repository never changes: kept until crowded out
        return elsewhere

    def job_withheld(self, repo: str, job_id: int) -> bool:
        """Whether the log of job `job_id` is withheld (its run's, see `run_withheld`). Costs one request
        (`GET /repos/{repo}/actions/jobs/{job_id}`, for the run's id) and, once per run, the run's own."""
        if not self.enabled or not self.is_public(repo):
            return False
        key = (repo.casefold(), job_id)
        run_id = self._jobs.get(key)
        if run_id is None:
            job = self.api.get(f"/repos/{repo}/actions/jobs/{job_id}", what=f"the run of job {job_id} (lockdown)")
            run_id = job.get("run_id") if isinstance(job, Mapping) else None
            if not isinstance(run_id, int) or isinstance(run_id, bool):
                # GitHub did not say which run: the log cannot be vouched for (withholding is the safe mistake).
                return True
            self._jobs.put(key, run_id)  # a job stays in its run
        return self.run_withheld(repo, run_id)

    def scrub_all(self, things: list[Any], repo: str) -> list[Any]:
        return [self.scrub(thing, repo) for thing in things]

    def is_public(self, repo: str) -> bool:
        key = repo.casefold()
        now = time.monotonic()
        known = self._public.get(key)
        if known is not None and known[1] > now:
            return known[0]
        try:
            data = self.api.get(f"/repos/{repo}", what=f"whether {repo} is public (lockdown)")
            public = data.get("private") is not True
        except ToolFailure:
            return True  # unknown: withhold, and ask again next time
        self._public.put(key, (public, now + VISIBILITY_TTL_S))
        return public


class _Recent(Generic[K, V]):
    """What lockdown learned from GitHub (a repository's visibility, a run's origin, a job's run), at most `most`
    entries, the least recently used leaving first; safe across the tool threads."""

    def __init__(self, most: int) -> None:
        self._most = most
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._most:
                self._entries.popitem(last=False)


def from_elsewhere(run: Any, repo: str) -> bool:
    """Whether a workflow run (GitHub's JSON) ran the head of another repository: a pull request from a fork.
    No head repository named counts as elsewhere (withholding is the safe mistake)."""
    if not isinstance(run, Mapping):
        return True
    head = run.get("head_repository")
    base = run.get("repository")
    head_name = head.get("full_name") if isinstance(head, Mapping) else None
    base_name = base.get("full_name") if isinstance(base, Mapping) else repo
    return head_name is None or str(head_name).casefold() != str(base_name).casefold()
