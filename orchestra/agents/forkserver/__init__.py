"""A pre-imported fork server for the programs of a local-env agent tree (docs/decisions.md D28).

Each program of a tree (buzz-acp, buzz-agent, buzz-dev-mcp and every `buzz` call) would otherwise
start an interpreter and import the ACP and MCP SDKs again, most of a trial's CPU. In a bubblewrap
sandbox the tree's first process is instead `server.py`, which imports them once and forks each
program from its main thread; the console scripts of the other programs are replaced, inside the
sandbox only, by `stub.py`, a client that starts in milliseconds and hands its argv, environment,
working directory and standard descriptors to the server. buzz-acp and buzz-agent make that
request for their own children themselves (`spawn.py`), so no client stays between a parent and
its agent or MCP server; the client serves `buzz` calls from the shell. `launch.py` is what the
sandbox's launcher needs.
"""
