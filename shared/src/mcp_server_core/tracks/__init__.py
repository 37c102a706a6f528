"""The command line: serving options, the command track (one command per tool) and the Agent Skill."""
