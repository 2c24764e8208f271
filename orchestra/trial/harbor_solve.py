"""The oracle's entry point for a Harbor task (orchestrator.md §4.5).

Harbor's `solution/solve.sh` does its work and ends; it does not write the oracle's `done`
marker the Buzz tasks' scripts write last. The oracle therefore runs this wrapper instead
(`solve_path` of the registration): `solve.sh` with bash, as Harbor's oracle agent runs it, and
then, only when it succeeded, the marker, so that the next request gets the final answer and a
failed run is retried like any other (at most 3 calls).
"""

from __future__ import annotations

import shlex

from orchestra.paths import EnvPaths


def harbor_solve_script(paths: EnvPaths) -> str:
    solve = shlex.quote(str(paths.solve_sh))
    marker_dir = '"${TMPDIR:-/tmp}/buzz-solve-${BUZZ_CHANNEL_ID}"'
    return (
        "#!/bin/sh\n"
        "# written by orchestra: Harbor's solve.sh, then the oracle's done marker\n"
        "set -e\n"
        f"bash {solve}\n"
        f"mkdir -p {marker_dir}\n"
        f"touch {marker_dir}/done\n"
    )
