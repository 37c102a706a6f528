from mcp_server_github import main

main()
