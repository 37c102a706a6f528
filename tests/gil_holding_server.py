"""A server whose tools hold a worker thread, for the SIGTERM and ping tests (`tests/test_preemption.py`).

`hold_the_gil` runs a catastrophic `re` match, which keeps the GIL in C for hours: no other thread, the event
loop's included, runs until it ends. `spin` is pure Python and busy until a file appears: it shares the GIL.
Each writes `started` first, so a test knows the call is running without guessing a delay.

    python tests/gil_holding_server.py MARKER_DIR [--transport http --port P] [--drain-timeout-s S]
        [--call-timeout-s S]
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from mcp_server_core import ReferenceServer
from mcp_server_core.conventions.settings import ServerSettings
from mcp_server_core.transport.serving import serve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("markers", type=Path)
    parser.add_argument("--transport", default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--drain-timeout-s", type=float, default=1.0)
    parser.add_argument("--call-timeout-s", type=float, default=120.0)
    args = parser.parse_args()
    markers: Path = args.markers
    server = ReferenceServer("gil-holding", version="0")

    @server.tool
    def hold_the_gil() -> str:
        """Hold the GIL in C for hours."""
        (markers / "started").write_text("hold_the_gil")
        return str(re.match(r"(a+)+$", "a" * 40 + "!"))

    @server.tool
    def spin() -> str:
        """Busy in Python until the file `release` appears."""
        (markers / "started").write_text("spin")
        while not (markers / "release").exists():
            sum(range(1000))
        return "released"

    settings = ServerSettings(
        transport=args.transport,
        port=args.port,
        drain_timeout_s=args.drain_timeout_s,
        call_timeout_s=args.call_timeout_s,
    )
    serve(server, settings)


if __name__ == "__main__":
    main()
