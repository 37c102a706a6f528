from mcp_server_template import main

main()
