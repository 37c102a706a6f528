"""`make dist`: build every distribution, check its metadata, and prove each server's wheel stands alone.

For each server: a fresh virtual environment gets its wheel and the helpers' wheel from dist/ (third-party
dependencies from the package index, as a user's resolver would take them), then `--help` runs, a real client
speaks initialize + tools/list over stdio, and the same server starts through `uvx --from <wheel>`. Exit 1 on the
first failure, naming it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

from mcp_server_core.testing import StdioWire

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
HELPERS = "mcp_server_core"
SERVERS = {
    "mcp-server-db": [],  # the bundled sample: proves it is inside the wheel
    "mcp-server-filesystem": ["{tmp}"],
    "mcp-server-github": ["--api-url", "http://127.0.0.1:9"],
    "mcp-server-slack": ["--token-file", "{tmp}/slack-token", "--api-url", "http://127.0.0.1:9/api/"],
    "mcp-server-template": ["--notes-dir", "{tmp}/notes"],
}
REQUIRED_METADATA = ("Name", "Version", "Summary", "Requires-Python", "License-Expression", "Description-Content-Type")


def run(*argv: str, **options: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **options)  # type: ignore[call-overload]
    if done.returncode != 0:
        sys.exit(f"dist: {' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def wheel(name: str) -> Path:
    (found,) = DIST.glob(f"{name.replace('-', '_')}-*.whl")
    return found


def check_metadata(path: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        missing = [field for field in REQUIRED_METADATA if not metadata.get(field)]
        if missing or not metadata.get_payload().strip():
            sys.exit(f"dist: {path.name} lacks {missing or 'a long description'}")
        if not any(n.endswith("licenses/LICENSE") for n in names):
            sys.exit(f"dist: {path.name} carries no LICENSE")
        if path.name.startswith("mcp_server_db-") and "mcp_server_db/sample.db" not in names:
            sys.exit("dist: the db wheel lacks its bundled sample database")
        if not path.name.startswith("mcp_server_core-") and not any(n.endswith("entry_points.txt") for n in names):
            sys.exit(f"dist: {path.name} declares no console script")


def smoke(server: str, tmp: Path) -> None:
    venv = tmp / f"venv-{server}"
    run("uv", "venv", "--quiet", str(venv), "--python", sys.executable)
    python = venv / "bin" / "python"
    run("uv", "pip", "install", "--quiet", "--python", str(python), str(wheel(HELPERS)), str(wheel(server)))
    args = [a.format(tmp=tmp) for a in SERVERS[server]]
    script = venv / "bin" / server
    run(str(script), "--help")
    with StdioWire([str(script), *args]) as wire:
        if "result" not in wire.initialize():
            sys.exit(f"dist: {server} from its wheel did not initialize")
        if not wire.request("tools/list")["result"]["tools"]:
            sys.exit(f"dist: {server} from its wheel lists no tools")
        wire.close()
    run("uvx", "--quiet", "--from", str(wheel(server)), "--with", str(wheel(HELPERS)), server, "--help")
    print(f"dist: {server}: wheel installs alone, answers initialize and tools/list, runs through uvx")


def main() -> None:
    shutil.rmtree(DIST, ignore_errors=True)
    run("uv", "build", "--all-packages", "--quiet", "--out-dir", str(DIST), cwd=ROOT)
    built = sorted([*DIST.glob("*.whl"), *DIST.glob("*.tar.gz")])
    run("uvx", "--quiet", "twine", "check", "--strict", *map(str, built))
    for path in built:
        if path.suffix == ".whl":
            check_metadata(path)
    with tempfile.TemporaryDirectory() as folder:
        # A token of the right shape: the server starts and lists its tools without calling Slack.
        (Path(folder) / "slack-token").write_text("xoxb-" + "0" * 24 + "\n")
        for server in SERVERS:
            smoke(server, Path(folder))


if __name__ == "__main__":
    main()
