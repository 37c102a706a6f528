"""`make bundles`: one MCP Bundle (.mcpb) per local server, for one-click install in Claude Desktop.

Each bundle uses the uv runtime (manifest 0.4): it carries a `pyproject.toml` and the server's and helpers'
wheels, and the host's uv resolves the rest (pydantic, sqlalchemy, ...) on the user's machine for their
platform, so nothing compiled is bundled. The manifest declares what the user sets in the host's form:
folders for the filesystem server, a database URL (sensitive: it may hold a password) for the database
server, and the tools each offers, read from the server itself. `mcpb validate` checks each manifest and
`mcpb pack` writes `dist/bundles/<server>.mcpb`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp_server_core.testing import StdioWire, python_module

ROOT = Path(__file__).resolve().parent.parent
MCPB = ROOT / "scripts" / "bundle" / "node_modules" / ".bin" / "mcpb"
OUT = ROOT / "dist" / "bundles"
AUTHOR = {"name": "The reference MCP servers authors"}

BUNDLES: dict[str, dict[str, Any]] = {
    "mcp-server-filesystem": {
        "display_name": "Files (reference MCP server)",
        "folder": "packages/mcp-server-filesystem",
        "args": ["${user_config.allowed_directories}"],
        "env": {"MCP_FS_READ_ONLY": "${user_config.read_only}"},
        "user_config": {
            "allowed_directories": {
                "type": "directory",
                "title": "Allowed folders",
                "description": "The folders the server may read and (unless read-only) change; nothing outside them.",
                "required": True,
                "multiple": True,
            },
            "read_only": {
                "type": "boolean",
                "title": "Read-only",
                "description": "Offer no tool that writes, moves or deletes.",
                "required": False,
                "default": False,
            },
        },
        "list_args": ["{tmp}"],
    },
    "mcp-server-db": {
        "display_name": "Database inspector (reference MCP server)",
        "folder": "packages/mcp-server-db",
        "args": [],
        # In the environment, not argv: a URL may hold a password, and argv is visible to every local user.
        "env": {"MCP_DB_URL": "${user_config.database_url}"},
        "user_config": {
            "database_url": {
                "type": "string",
                "title": "Database URL",
                "description": "SQLAlchemy URL, e.g. postgresql://reader@host/db; empty: the bundled sample.",
                "required": False,
                "default": "",
                "sensitive": True,
            },
        },
        "list_args": [],
    },
}


def run(*argv: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        sys.exit(f"bundles: {' '.join(map(str, argv))} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def _pyproject(name: str, version: str, wheels: dict[str, str]) -> str:
    sources = "\n".join(f'{dist} = {{ path = "wheels/{file}" }}' for dist, file in wheels.items())
    return f"""[project]
name = "{name}-bundle"
version = "{version}"
description = "What the host's uv installs to run {name} from its MCP Bundle"
requires-python = ">=3.11"
dependencies = [{", ".join(f'"{dist}"' for dist in wheels)}]

[tool.uv]
package = false

[tool.uv.sources]
# The wheels travel inside the bundle; everything else comes from the package index, for the user's platform.
{sources}
"""


def _tools(name: str) -> list[dict[str, str]]:
    spec = BUNDLES[name]
    with tempfile.TemporaryDirectory() as tmp:
        args = [a.format(tmp=tmp) for a in spec["list_args"]]
        with StdioWire(python_module(name.replace("-", "_"), *args)) as wire:
            wire.initialize()
            tools = wire.request("tools/list")["result"]["tools"]
            wire.close()
    return [{"name": t["name"], "description": t["description"].split("\n")[0]} for t in tools]


def _version(folder: Path) -> str:
    for line in (folder / "pyproject.toml").read_text().splitlines():
        if line.startswith("version = "):
            return line.split('"')[1]
    raise SystemExit(f"bundles: no version in {folder}/pyproject.toml")


def stage(name: str, target: Path, wheel_dir: Path) -> Path:
    """The bundle's folder: manifest, pyproject.toml, entry point and wheels."""
    spec = BUNDLES[name]
    folder = ROOT / spec["folder"]
    version = _version(folder)
    staged = target / name
    shutil.rmtree(staged, ignore_errors=True)
    (staged / "src").mkdir(parents=True)
    (staged / "wheels").mkdir()
    wheels = {}
    for dist in ("mcp-server-core", name):
        (wheel,) = wheel_dir.glob(f"{dist.replace('-', '_')}-*-py3-none-any.whl")
        shutil.copy(wheel, staged / "wheels" / wheel.name)
        wheels[dist] = wheel.name
    module = name.replace("-", "_")
    (staged / "src" / "server.py").write_text(
        f'"""The bundle\'s entry point: the same main() as the `{name}` console script."""\n\n'
        f"from {module} import main\n\nmain()\n"
    )
    (staged / "pyproject.toml").write_text(_pyproject(name, version, wheels))
    shutil.copy(ROOT / "LICENSE", staged / "LICENSE")
    manifest = {
        "manifest_version": "0.4",
        "name": name,
        "display_name": spec["display_name"],
        "version": version,
        "description": _summary(folder),
        "author": AUTHOR,
        "license": "MIT",
        "keywords": ["mcp", name.removeprefix("mcp-server-")],
        "server": {
            "type": "uv",
            "entry_point": "src/server.py",
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--quiet", "--directory", "${__dirname}", "src/server.py", *spec["args"]],
                "env": spec["env"],
            },
        },
        "tools": _tools(name),
        "user_config": spec["user_config"],
        "compatibility": {"platforms": ["darwin", "linux"], "runtimes": {"python": ">=3.11"}},
    }
    (staged / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return staged


def _summary(folder: Path) -> str:
    for line in (folder / "pyproject.toml").read_text().splitlines():
        if line.startswith("description = "):
            return line.split('"')[1]
    return ""


def build(out: Path = OUT) -> list[Path]:
    """Validate and pack every bundle into `out`; returns the .mcpb files."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheels = Path(tmp) / "wheels"
        for dist in ("mcp-server-core", *BUNDLES):
            run("uv", "build", "--package", dist, "--wheel", "--quiet", "--out-dir", wheels, cwd=ROOT)
        packed = []
        for name in BUNDLES:
            staged = stage(name, Path(tmp), wheels)
            run(MCPB, "validate", staged / "manifest.json")
            bundle = out / f"{name}.mcpb"
            run(MCPB, "pack", staged, bundle)
            packed.append(bundle)
            print(f"bundles: {bundle.relative_to(ROOT) if bundle.is_relative_to(ROOT) else bundle}")
    return packed


if __name__ == "__main__":
    build()
