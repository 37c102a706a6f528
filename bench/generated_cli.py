"""`fastmcp generate-cli` for one of our servers, as the token and start-up benchmarks run it beside our commands.

The generated script keeps the server's launch (an MCPConfig entry) as its CLIENT_SPEC; each `call-tool TOOL
--flag V` starts the server and an MCP client, calls the tool and prints the answer. Its SKILL.md, written beside
it, is the model's guide to the flags.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class GeneratedCli:
    script: Path
    skill: str
    json_flags: set[tuple[str, str]]
    """(tool, flag) pairs the script json.loads: its SKILL.md marks them "JSON string"."""

    def argv(self, tool: str, arguments: dict[str, Any]) -> list[str]:
        """`call-tool TOOL --flag V …` for MCP arguments, the way its SKILL.md says to write them."""
        words = ["call-tool", tool]
        for key, value in arguments.items():
            flag = "--" + key.replace("_", "-")
            if (tool, flag) in self.json_flags:
                words += [flag, json.dumps(value)]
            elif isinstance(value, bool):
                words += [flag] if value else []
            elif isinstance(value, list):
                words += [word for item in value for word in (flag, str(item))]
            else:
                words += [flag, str(value)]
        return words


def generate(name: str, argv: list[str], env: dict[str, str], folder: Path) -> GeneratedCli:
    """Write `folder/cli.py` and `folder/SKILL.md` for the server `argv` starts; `name` names both."""
    folder.mkdir(parents=True)
    # An MCPConfig file: the script keeps it as its CLIENT_SPEC; its stem names the CLI and the skill.
    config = folder / f"{name}.json"
    config.write_text(json.dumps({"mcpServers": {name: {"command": argv[0], "args": argv[1:], "env": env}}}))
    fastmcp = Path(sys.executable).with_name("fastmcp")
    done = subprocess.run(
        [str(fastmcp), "generate-cli", config.name, "cli.py"], capture_output=True, text=True, cwd=folder, check=False
    )
    if done.returncode:
        raise RuntimeError(f"fastmcp generate-cli {name}: {done.stdout[-300:]} {done.stderr[-300:]}")
    skill = (folder / "SKILL.md").read_text()
    # The script json.loads every flag whose schema is not a plain type or a list of them (a path that may also
    # be a list, say); its SKILL.md marks those "JSON string", which is how a model would know.
    json_flags = {
        (section.split("\n", 1)[0].strip(), flag)
        for section in skill.split("\n### ")[1:]
        for flag in re.findall(r"^\| `(--[\w-]+)` \|.*JSON string\)? \|$", section, re.M)
    }
    return GeneratedCli(folder / "cli.py", skill, json_flags)
