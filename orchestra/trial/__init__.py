"""The life of one trial (orchestrator.md §7), read top to bottom from `run.run_trial`.

* `run` — `run_trial`: the steps in order; errors skip work, never stop or finalize.
* `state` — `TrialState`: what the trial knows while it runs, one small state object per
  phase (`SetupState` … `FinalizeState`) holding the result documents' typed parts;
  `context` — `JobContext`: the services it is given (condition, stack, clients, registry,
  oracle, environment kind).
* phases: `setup_phase` (steps 2-10), `agent_phase` (11-14), `teardown` (15-17),
  `grading` (18-19), `finalize` (20-21); each writes only its own part of the state.
* `recorder` — status, phase, the phase clock and trial.log; `record` — config.json and
  result.json, rendered field by field from the state and the recorder.
* `env/` — where agents run: the environment protocol and its local and docker kinds.
* helpers: `relay_ops` (client pool and relay operations), `launch` (an agent's process
  environment and oracle registration), `prompts` (the composed prompt), `fixture_files`,
  `identities`, `observer` (the channel subscription), `eventlog` and `filewatch` (ACP event
  logs), `completion` (§7.11), `budget`, `accounting`, `redact`, `errors` (§12).
"""
