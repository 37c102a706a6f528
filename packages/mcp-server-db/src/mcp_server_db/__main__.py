from mcp_server_db import main

main()
