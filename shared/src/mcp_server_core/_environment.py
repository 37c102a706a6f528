"""fastmcp reads its settings when first imported; these defaults must be in place before that.

- No update check: a server must never reach the network on its own (and fastmcp's check calls an index).
- No banner and no rich console output: stderr is the host's log, read by people and parsers alike.
Each stays overridable from the environment.
"""

import os

for _name, _value in (
    ("FASTMCP_CHECK_FOR_UPDATES", "off"),
    ("FASTMCP_SHOW_SERVER_BANNER", "false"),
    ("FASTMCP_ENABLE_RICH_LOGGING", "false"),
    ("FASTMCP_ENABLE_RICH_TRACEBACKS", "false"),
):
    os.environ.setdefault(_name, _value)
