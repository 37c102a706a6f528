"""The wire kit's ports: two test runs on one machine (two clones, each `make test`) never hand out the same
port, whatever worker names they share."""

from __future__ import annotations

import os
import subprocess
import sys

from mcp_server_core.testing import free_port

HOLD = """
import sys
from mcp_server_core.testing import free_port
print(free_port(), flush=True)
sys.stdin.read()  # holds its claims until told to leave
"""


def test_a_port_another_run_handed_out_is_never_handed_out_here() -> None:
    env = {**os.environ, "PYTEST_XDIST_WORKER": "gw0"}
    others = [
        subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        for _ in range(3)
    ]
    try:
        taken = {int(other.stdout.readline()) for other in others if other.stdout is not None}
        assert len(taken) == 3, "three runs, three ports"
        before = os.environ.get("PYTEST_XDIST_WORKER")
        os.environ["PYTEST_XDIST_WORKER"] = "gw0"
        try:
            mine = {free_port() for _ in range(50)}
        finally:
            if before is None:
                del os.environ["PYTEST_XDIST_WORKER"]
            else:
                os.environ["PYTEST_XDIST_WORKER"] = before
        assert not mine & taken
        assert len(mine) == 50
    finally:
        for other in others:
            other.communicate(b"", timeout=30)
