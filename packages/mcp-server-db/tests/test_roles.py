"""The role map (--role-map): what the operator's file may say, who maps to which role, and the engines and modes
it refuses to start with. The per-call SET ROLE against PostgreSQL, with real JWTs, is tests/test_db_roles.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp_server_core import Refused
from mcp_server_core.testing import python_module
from mcp_server_db.database import Database
from mcp_server_db.roles import RoleMap, RoleMapFile, acting_as, call_role, quoted_role


def _map(tmp_path: Path, text: str, name: str = "roles.toml", *, claim: str | None = None) -> RoleMap:
    path = tmp_path / name
    path.write_text(text)
    return RoleMap.load(path, claim=claim)


def test_a_toml_map_keyed_on_a_claim(tmp_path: Path) -> None:
    roles = _map(tmp_path, 'claim = "department"\n[roles]\nsales = "app_sales"\nsupport = "app_support"\n')
    assert roles.role_for("alice/alice", {"department": "sales"}) == "app_sales"
    assert roles.all_roles == {"app_sales", "app_support"}
    with pytest.raises(Refused, match=r"has no database role.*'department' claim"):
        roles.role_for("carol/carol", {"department": "marketing"})
    with pytest.raises(Refused, match="has no database role"):
        roles.role_for("dave/dave", {})  # no claim at all


def test_a_json_map_keyed_on_the_principal_with_a_default(tmp_path: Path) -> None:
    roles = _map(tmp_path, json.dumps({"roles": {"alice/alice": "app_alice"}, "default": "app_guest"}), "r.json")
    assert roles.role_for("alice/alice", {"sub": "alice"}) == "app_alice"
    assert roles.role_for("bob/bob", {}) == "app_guest"


def test_the_flag_overrides_the_files_claim(tmp_path: Path) -> None:
    roles = _map(tmp_path, 'claim = "department"\n[roles]\nops = "app_ops"\n', claim="team")
    assert roles.role_for("x", {"team": "ops", "department": "sales"}) == "app_ops"


def test_a_list_claim_maps_when_its_values_name_one_role(tmp_path: Path) -> None:
    roles = _map(tmp_path, 'claim = "groups"\n[roles]\nops = "app_ops"\noncall = "app_ops"\nhr = "app_hr"\n')
    assert roles.role_for("x", {"groups": ["ops", "oncall", "unknown"]}) == "app_ops"
    with pytest.raises(Refused, match="several database roles"):
        roles.role_for("x", {"groups": ["ops", "hr"]})
    with pytest.raises(Refused):
        roles.role_for("x", {"groups": [{"ops": 1}], "other": "ops"})  # only strings and numbers are keys


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[roles]\n", "names no role"),
        ('[roles]\na = ""\n', "not a PostgreSQL role name"),
        (f'[roles]\na = "{"r" * 64}"\n', "not a PostgreSQL role name"),  # PostgreSQL would cut it to another name
        ("[roles]\na = 1\n", "not a PostgreSQL role name"),
        ('role = "x"\n[roles]\na = "b"\n', "unknown keys: role"),
        ("roles = 3\n", "'roles' table"),
        ("[roles\n", "not valid TOML"),
    ],
)
def test_a_map_the_server_cannot_trust_stops_it_at_start(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        _map(tmp_path, text)


def test_a_role_name_reaches_sql_only_quoted() -> None:
    assert quoted_role('a"; DROP TABLE t; --') == '"a""; DROP TABLE t; --"'


def test_a_refused_caller_carries_its_refusal_to_every_connection(tmp_path: Path) -> None:
    roles = _map(tmp_path, '[roles]\n"alice/alice" = "app_alice"\n')
    assert call_role() is None  # outside a call: the server's own work, as the login role
    with acting_as(roles, "mallory/mallory", {}) as role:
        assert role is None
        for _ in range(2):
            with pytest.raises(Refused, match="mallory/mallory has no database role"):
                call_role()
    with acting_as(roles, "alice/alice", {}) as role:
        assert role == call_role() == "app_alice"


def test_engines_without_roles_and_write_mode_are_refused_at_start(tmp_path: Path) -> None:
    roles = _map(tmp_path, '[roles]\na = "b"\n')
    roles = RoleMapFile(tmp_path / "roles.toml")
    with pytest.raises(ValueError, match="PostgreSQL-only"):
        Database(None, role_map=roles)
    with pytest.raises(ValueError, match="PostgreSQL-only"):
        Database("mysql+pymysql://root@127.0.0.1:3306/x", role_map=roles)
    with pytest.raises(ValueError, match="set_config"):
        Database("postgresql+psycopg://u@127.0.0.1:5432/x", role_map=roles, allowed_functions=["SET_CONFIG"])
    with pytest.raises(ValueError, match="could change its own role"):
        Database("postgresql+psycopg://u@127.0.0.1:5432/x", role_map=roles, allow_write=True)


def test_the_server_says_why_it_will_not_start(tmp_path: Path) -> None:
    role_map = tmp_path / "roles.toml"
    role_map.write_text('[roles]\na = "b"\n')
    done = subprocess.run(
        [*python_module("mcp_server_db", "--role-map", str(role_map)), "--transport", "http", "--port", "9"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "--role-map is PostgreSQL-only" in done.stderr


def test_an_edited_map_is_read_again_and_a_broken_edit_keeps_the_map_before(tmp_path: Path) -> None:
    path = tmp_path / "roles.json"
    path.write_text(json.dumps({"roles": {"alice/alice": "app_alice", "bob/bob": "app_bob"}}))
    watched = RoleMapFile(path)
    watched.RECHECK_S = 0.0  # look at every call here; a second apart when serving
    assert watched.current().role_for("bob/bob", {}) == "app_bob"
    path.write_text(json.dumps({"roles": {"alice/alice": "app_alice"}}))  # bob removed: revoked
    with pytest.raises(Refused, match="bob/bob has no database role"):
        watched.current().role_for("bob/bob", {})
    assert watched.generation == 1
    path.write_text('{"roles": {"alice/alice": ""}}')  # an edit that cannot be used
    assert watched.current().role_for("alice/alice", {}) == "app_alice"
    assert watched.generation == 1
