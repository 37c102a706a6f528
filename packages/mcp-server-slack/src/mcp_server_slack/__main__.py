from mcp_server_slack import main

main()
