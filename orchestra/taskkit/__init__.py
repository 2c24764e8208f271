"""The task kit below the command line (docs/writing-a-task.md): the verifier-case schema and
the evidence built for cases, verifier runs, stack replays and the scaffold `task new` writes."""
