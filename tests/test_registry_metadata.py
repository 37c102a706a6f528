"""Each server's server.json for the MCP Registry: valid against the registry's published schema, at the
distribution's version, claimed by its README, and declaring as secret every token the server asks a host for."""

from __future__ import annotations

import importlib.resources
import json
import re
import tomllib

import jsonschema
import pytest

from tests.conftest import ROOT

SERVERS = ["mcp-server-db", "mcp-server-filesystem", "mcp-server-github", "mcp-server-slack"]
SECRETS = {
    "mcp-server-db": {"MCP_DB_URL"},
    "mcp-server-github": {"GITHUB_TOKEN"},
    "mcp-server-slack": {"SLACK_BOT_TOKEN"},
}


def _schema(url: str) -> dict[str, object]:
    """The released schema `url` names, as the skillsaw package ships it (schemas/mcp_registry/vYYYY_MM_DD)."""
    release = re.search(r"/schemas/(\d{4}-\d{2}-\d{2})/server\.schema\.json$", url)
    assert release, f"$schema is not a released server.json schema: {url}"
    folder = importlib.resources.files("skillsaw") / "schemas" / "mcp_registry" / f"v{release[1].replace('-', '_')}"
    schema: dict[str, object] = json.loads((folder / "server.schema.json").read_text())
    assert schema["$id"] == url
    return schema


@pytest.mark.parametrize("name", SERVERS)
def test_server_json_is_valid_current_and_claimed(name: str) -> None:
    folder = ROOT / "packages" / name
    document = json.loads((folder / "server.json").read_text())
    jsonschema.validate(document, _schema(document["$schema"]))
    version = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["version"]
    (package,) = document["packages"]
    assert document["version"] == package["version"] == version, "release.yml keeps these in step with the tag"
    assert (package["registryType"], package["identifier"]) == ("pypi", name)
    assert f"mcp-name: {document['name']}" in (folder / "README.md").read_text(), "the registry's ownership proof"
    declared = {v["name"]: v for v in package.get("environmentVariables", [])}
    assert set(declared) == SECRETS.get(name, set())
    assert all(v["isSecret"] for v in declared.values())
