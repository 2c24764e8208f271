from orchestra.agents.forkserver.server import main

main()
