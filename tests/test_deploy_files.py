"""deploy/compose.yaml, which no test can run (no Docker daemon here), read instead: every file it mounts exists,
each host installs packages of this checkout and starts a console script they ship with flags that script has
(choices among its choices) and settings it reads from the environment, and the gateways' configurations send
to the services and ports compose starts."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from mcp_server_template.settings import TemplateSettings

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def _host_command() -> list[str]:
    """The words of the hosts' `sh -c` command."""
    command = _compose()["services"]["host-a"]["command"]
    assert command[:2] == ["sh", "-c"], command
    return shlex.split(command[2])


def test_every_file_compose_mounts_exists() -> None:
    compose = _compose()
    named = set(compose.get("volumes") or {})
    mounted = []
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source in named:
                continue
            mounted.append(source)
            assert (DEPLOY / source).exists(), f"{name} mounts {source}, which is not in the checkout"
    assert {"./nginx.conf", "./haproxy.cfg", ".."} <= set(mounted), mounted


def test_the_hosts_install_packages_of_the_checkout() -> None:
    compose = _compose()
    [mount] = [v for v in compose["services"]["host-a"]["volumes"] if v.startswith("..:")]
    inside = mount.split(":")[1]  # the checkout, as the container sees it
    words = _host_command()
    installed = words[words.index("install") + 1 : words.index("&&")]
    folders = [word for word in installed if not word.startswith("-")]
    assert folders, words
    for folder in folders:
        assert folder.startswith(inside + "/"), folder
        assert (ROOT / folder.removeprefix(inside + "/") / "pyproject.toml").exists(), f"{folder} is no package"


def _flags(help_text: str) -> dict[str, set[str] | None]:
    """Each flag of a `--help`: its choices, an empty set when it takes any value, None when it takes none."""
    flags: dict[str, set[str] | None] = {}
    for flag, value in re.findall(r"^\s+(--[\w-]+)(?: (\{[^}]*\}|[A-Z][A-Z_]*))?", help_text, re.MULTILINE):
        if not value:
            flags[flag] = None
        elif value.startswith("{"):
            flags[flag] = set(value[1:-1].split(","))
        else:
            flags[flag] = set()
    return flags


def test_the_hosts_start_a_console_script_with_flags_it_has() -> None:
    words = _host_command()
    script, *arguments = words[words.index("exec") + 1 :]
    scripts = {}
    for pyproject in [*ROOT.glob("packages/*/pyproject.toml"), *ROOT.glob("examples/*/pyproject.toml")]:
        scripts.update(tomllib.loads(pyproject.read_text())["project"].get("scripts", {}))
    assert script in scripts, f"{script} is no console script of this checkout"
    installed = Path(sys.executable).parent / script
    help_text = subprocess.run([str(installed), "--help"], capture_output=True, text=True, timeout=60, check=True)
    flags = _flags(help_text.stdout)
    assert "--transport" in flags, help_text.stdout  # the parse above found the help's flags
    given = iter(arguments)
    for word in given:
        assert word in flags, f"compose gives {script} {word}, which its --help does not list"
        choices = flags[word]
        if choices is None:
            continue
        value = next(given, None)
        assert value is not None, f"{word} needs a value"
        assert not value.startswith("--"), f"{word} needs a value, not {value}"
        assert not choices or value in choices, f"{word} {value}: not one of {sorted(choices)}"


def test_the_hosts_environment_names_settings_the_server_reads() -> None:
    environment = _compose()["services"]["host-a"]["environment"]
    prefix = TemplateSettings.model_config["env_prefix"]
    for name in environment:
        assert name.startswith(prefix), name
        assert name.removeprefix(prefix).lower() in TemplateSettings.model_fields, f"{name} is no setting"
    state_url = environment[f"{prefix}STATE_URL"]
    assert state_url.split("//")[1].split(":")[0] in _compose()["services"], state_url


def test_the_gateways_send_to_the_hosts_compose_starts() -> None:
    compose = _compose()
    words = _host_command()
    port = words[words.index("--port") + 1]
    hosts = {
        name
        for name, service in compose["services"].items()
        if service.get("command") == compose["services"]["host-a"]["command"]
    }
    assert hosts == {"host-a", "host-b"}, hosts
    nginx = (DEPLOY / "nginx.conf").read_text()
    haproxy = (DEPLOY / "haproxy.cfg").read_text()
    for host in hosts:
        assert nginx.count(f"server {host}:{port};") == 2, f"nginx.conf does not send to {host}:{port}"
        assert haproxy.count(f" {host}:{port}") == 2, f"haproxy.cfg does not send to {host}:{port}"
    # Each gateway listens on the port compose publishes for it.
    listens = {"nginx": re.findall(r"listen (\d+);", nginx), "haproxy": re.findall(r"bind :(\d+)", haproxy)}
    for gateway, ports in listens.items():
        published = {mapping.rsplit(":", 1)[1] for mapping in compose["services"][gateway]["ports"]}
        assert set(ports) == published, (gateway, ports, published)
