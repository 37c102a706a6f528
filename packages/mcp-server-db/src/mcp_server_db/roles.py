"""Each caller as its own database role: the operator's role map (`--role-map`), and the role of the call now.

Over HTTP many people share one server, and without a map every one of them reads as the server's login role:
whatever that role may see, any caller may, and the database's grants and row-level security cannot tell them
apart (the confused deputy of the MCP authorization spec). With a map, each call runs `SET ROLE <its role>` on its
connection before anything else (`Database.connect`), so the database decides per caller, and a caller the map
does not name reaches no connection at all, unless the map gives a default role.

The map is an allowlist the operator owns: a role name only ever comes from the file, never from a token (a
claim value is only a key looked up in it), and reaches SQL only quoted as an identifier.

    # roles.toml (or the same shape in JSON)
    claim = "department"        # optional: which JWT claim to look up; --role-claim overrides; none: the principal
    default = "app_guest"       # optional: the role of callers the map does not name; none: they are refused
    [roles]
    sales = "app_sales"
    support = "app_support"
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_server_core import Refused, one_line

__all__ = ["RoleMap", "RoleMapFile", "acting_as", "call_role", "quoted_role"]

logger = logging.getLogger(__name__)

_MOST_FILE_BYTES = 1024 * 1024
_MOST_ENTRIES = 100_000
_MOST_KEY_CHARS = 1_000
_PG_MOST_NAME_BYTES = 63
"""PostgreSQL cuts a longer identifier to 63 bytes: a longer name in the map would be another role."""
PRINCIPAL = "principal"
"""What the map is keyed on without a claim: the caller as audit lines name it (`client/subject` of a JWT, a static
token's fingerprint, `local`)."""


@dataclass(frozen=True)
class RoleMap:
    """Which database role each caller acts as; see the module docstring for the file."""

    roles: Mapping[str, str]
    claim: str
    default: str | None
    path: Path

    @classmethod
    def load(cls, path: Path, *, claim: str | None = None) -> RoleMap:
        """Read and check the operator's file; ValueError says what is wrong, so the server stops at start."""
        try:
            with path.open("rb") as file:
                raw = file.read(_MOST_FILE_BYTES + 1)
        except OSError as exc:
            raise ValueError(f"cannot read the role map {path}: {exc.strerror or exc}") from None
        if len(raw) > _MOST_FILE_BYTES:
            raise ValueError(f"the role map {path} is over {_MOST_FILE_BYTES:,} bytes")
        try:
            data: Any = tomllib.loads(raw.decode()) if path.suffix.lower() == ".toml" else json.loads(raw)
        except (UnicodeDecodeError, ValueError) as exc:
            kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
            raise ValueError(f"the role map {path} is not valid {kind}: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("roles", {}), dict):
            raise ValueError(f"the role map {path} must be an object with a 'roles' table (claim value -> role)")
        unknown = set(data) - {"roles", "claim", "default"}
        if unknown:
            raise ValueError(f"the role map {path} has unknown keys: {', '.join(sorted(unknown))}")
        roles: dict[str, str] = data.get("roles", {})
        if len(roles) > _MOST_ENTRIES:
            raise ValueError(f"the role map {path} names over {_MOST_ENTRIES:,} callers")
        for key, role in roles.items():
            if not key or len(key) > _MOST_KEY_CHARS:
                raise ValueError(f"the role map {path} has an empty or over-long key")
            _check_role_name(path, role)
        default = data.get("default")
        if default is not None:
            _check_role_name(path, default)
        chosen = claim or data.get("claim") or PRINCIPAL
        if not isinstance(chosen, str):
            raise ValueError(f"the role map {path}: 'claim' must be a claim's name")
        if not roles and default is None:
            raise ValueError(f"the role map {path} names no role: every call would be refused")
        return cls(roles=dict(roles), claim=chosen, default=default, path=path)

    @property
    def all_roles(self) -> frozenset[str]:
        """Every role a call may act as: checked at each new connection (`Database._check_role`)."""
        return frozenset(self.roles.values()) | ({self.default} if self.default else set())

    def role_for(self, principal: str, claims: Mapping[str, Any]) -> str:
        """The role of a caller, or `Refused` saying why it has none."""
        value = principal if self.claim == PRINCIPAL else claims.get(self.claim)
        values = value if isinstance(value, list) else [value]
        keys = [str(v) for v in values if isinstance(v, str | int) and not isinstance(v, bool)]
        found = sorted({self.roles[key] for key in keys if key in self.roles})
        if len(found) == 1:
            return found[0]
        who = one_line(principal, 200)
        if len(found) > 1:
            raise Refused(
                f"Refused: the caller {who} matches several database roles in the server's role map "
                f"({', '.join(found)}) by its '{self.claim}' claim, and a call acts as one.",
                hint="The operator must make the role map name one role for this caller.",
            )
        if self.default is not None:
            return self.default
        named = f"its '{self.claim}' claim" if self.claim != PRINCIPAL else "it"
        raise Refused(
            f"Refused: the caller {who} has no database role: the server's role map names none for {named}, "
            "and callers it does not name reach no data.",
            hint="Ask the server's operator to add you to the role map (--role-map).",
        )


class RoleMapFile:
    """The role map, read again when its file changes (looked at, at most every second, when a call asks): a
    caller removed from it is refused within seconds, without a restart, as a token removed from the token file
    is. An edit that cannot be used keeps the map from before it, and the log says why. `generation` counts the
    maps read: a new one may name new roles, which `Database` checks before any call acts as them."""

    RECHECK_S = 1.0

    def __init__(self, path: Path, *, claim: str | None = None) -> None:
        self.path = path
        self._claim = claim
        self._seen = _content(path)
        self._map = RoleMap.load(path, claim=claim)
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        self.generation = 0

    def current(self) -> RoleMap:
        """The map as the file says now (read again only if it changed since last looked at)."""
        if time.monotonic() - self._checked < self.RECHECK_S:
            return self._map
        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.RECHECK_S:
                return self._map
            self._checked = now
            seen = _content(self.path)
            if seen == self._seen:
                return self._map
            self._seen = seen
            try:
                self._map = RoleMap.load(self.path, claim=self._claim)
            except ValueError as exc:
                logger.warning("role map %s changed but was not reloaded, the map before stays: %s", self.path, exc)
                return self._map
            self.generation += 1
            logger.info(
                "role map %s reloaded: %d callers, %d roles", self.path, len(self._map.roles), len(self._map.all_roles)
            )
            return self._map


def _content(path: Path) -> bytes | None:
    try:
        with path.open("rb") as file:
            return file.read(_MOST_FILE_BYTES + 1)
    except OSError:
        return None


def _check_role_name(path: Path, role: object) -> None:
    if not isinstance(role, str) or not role or "\x00" in role or len(role.encode()) > _PG_MOST_NAME_BYTES:
        raise ValueError(
            f"the role map {path} names a role that is not a PostgreSQL role name (a string of 1 to 63 bytes): "
            f"{one_line(str(role), 80)}"
        )


def quoted_role(role: str) -> str:
    """A role name as SQL, quoted as an identifier (never as it came, whatever it holds)."""
    return '"' + role.replace('"', '""') + '"'


# The role of the call being served: set once per request from its caller's token (server.py's middleware; the
# command line's operator in spec.py), read by every connection the call takes (`Database.connect`). A refused
# caller holds its refusal, raised when the call asks for a connection, so nothing of it reaches the database.
# Unset outside a request: the server's own work (the schema poller, health) acts as the login role.
_call_role: ContextVar[str | Refused | None] = ContextVar("mcp_server_db_call_role", default=None)


def call_role() -> str | None:
    """The role the current call acts as; None outside a call or without a map; raises the caller's refusal."""
    role = _call_role.get()
    if isinstance(role, Refused):
        raise copy.copy(role) from None  # a fresh one each time: a call may ask for several connections
    return role


@contextmanager
def acting_as(role_map: RoleMap, principal: str, claims: Mapping[str, Any]) -> Iterator[str | None]:
    """Within: the calls here act as this caller's role (yielded; None when the caller is refused)."""
    try:
        role: str | Refused = role_map.role_for(principal, claims)
    except Refused as refusal:
        role = refusal
    token = _call_role.set(role)
    try:
        yield role if isinstance(role, str) else None
    finally:
        _call_role.reset(token)
