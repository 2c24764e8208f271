"""Names of the export tests' shared oracle run (tests/export/conftest.py)."""

TASKS = ("user-mention", "reply-to-thread")
ERROR_TRIAL = "user-mention__errored"
ERROR_MESSAGE = "the agent process exited with code 1 before it was ready"
