"""The jobs directory's documents as typed models (orchestrator.md §10, §11, §12).

`enums` names every status, phase, stop reason and error type; `trial` the trial's
`config.json` and `result.json`; `job` the job's; `summary` the §11 aggregation they embed;
`io` reads a document through its model (one-line `DocumentError` naming file and field) and
writes it in the §10.1 format. Every writer builds these models and every reader loads them,
so a field name lives in one place.
"""
