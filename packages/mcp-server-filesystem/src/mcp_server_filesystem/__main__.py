from mcp_server_filesystem import main

main()
