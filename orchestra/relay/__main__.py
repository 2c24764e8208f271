from orchestra.relay.cli import main

main()
