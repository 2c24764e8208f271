from orchestra.agents.acp.cli import main

main()
