"""How messages arrive: stdio, Streamable HTTP and its front, the JSON-RPC reader, and running a server."""
