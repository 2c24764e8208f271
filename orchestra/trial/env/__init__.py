"""Where a trial's agents run: the environment protocol and its local and docker kinds (§5.8)."""
