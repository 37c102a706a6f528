"""The MCP side of a server: the server, toolsets, notifications, resources, progress, cancellation."""
