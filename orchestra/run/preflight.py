"""The checks a run makes before it starts anything (orchestrator.md §2.4), for the real run
and `--dry-run` alike: each failure is a `Refused` with how the run ends and one line per
problem."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

from orchestra.config.condition import Condition, condition_problems
from orchestra.config.endpoints import resolve_api_key
from orchestra.documents.enums import EnvKind
from orchestra.documents.io import DocumentError
from orchestra.documents.job import JobConfig, JobResult
from orchestra.documents.run_config import RunConfig
from orchestra.errors import OrchestraError
from orchestra.jobs.endpoint_probe import ProbeResult, probe_endpoints
from orchestra.jobs.identity import differing_fields, replay_components, replay_record
from orchestra.jobs.layout import JobConfigMismatch, scan_trials
from orchestra.jobs.leftovers import JobInUse, check_job_free
from orchestra.jobs.plan import PlannedJob
from orchestra.paths import JobPaths
from orchestra.run.outcome import Refused, RunEnd
from orchestra.run.scope import RunScope
from orchestra.stack.info import scripts_dir
from orchestra.stack.select import Modes
from orchestra.trial.env.local_image import LocalImageError, read_local_image
from orchestra.trial.env.sandbox import sandbox_support

AGENT_PROGRAMS = ("buzz-acp", "buzz-agent", "buzz-dev-mcp")
UNSAFE_PATH_CHARS = re.compile(r"""[\s'"$\\`;&|<>()*?\[\]{}!]""")


class Preflight(OrchestraError):
    """A preflight failure: exit 2 with the message."""

    exit_code = 2


class MissingKeys(Preflight):
    """A roster endpoint's API-key variable is not set."""


def check_condition(condition: Condition) -> None:
    """Artifact hashes, endpoints the config lacks, unsupported providers: validation errors
    of the manifest and endpoint config (exit 1, §2.4), checked before the run is chosen,
    whose record names the endpoints."""
    problems = condition_problems(condition)
    if problems:
        raise Refused(RunEnd.USAGE, "\n".join(map(str, problems)))


def api_keys_of(condition: Condition, *, allow_missing: bool = False) -> dict[str, str]:
    """Every roster endpoint's key (`Preflight` naming each missing one unless allowed)."""
    keys: dict[str, str] = {}
    missing = []
    for name, endpoint in condition.used_endpoints().items():
        if endpoint.api_key_env is None:
            continue
        value = resolve_api_key(endpoint.api_key_env, os.environ)
        if value is None:
            missing.append(f"{endpoint.api_key_env} is not set (endpoint {name})")
        else:
            keys[endpoint.api_key_env] = value
    if missing and not allow_missing:
        raise MissingKeys("\n".join(missing))
    return keys


def check_endpoints(
    condition: Condition,
    api_keys: dict[str, str],
    say: Callable[[str], None],
    warn: Callable[[str], None],
    *,
    strict: bool = False,
) -> list[ProbeResult]:
    """The live check: one capability probe per endpoint, all at once; each warning is a
    refusal when `strict` (`--strict-endpoints`). What each probe measured."""
    if condition.is_oracle:
        return []
    results = asyncio.run(probe_endpoints(condition, api_keys))
    failed = [result for result in results if result.problem is not None]
    if failed:
        raise Preflight("\n".join(result.line() for result in failed))
    warnings = [line for result in results for line in result.warning_lines()]
    if warnings and strict:
        raise Preflight("\n".join([*warnings, "(--strict-endpoints: every warning refuses)"]))
    names = ", ".join(result.endpoint for result in results)
    say(f"endpoint check: {names} answered")
    for result in results:
        say(f"  {result.summary()}")
    for line in warnings:
        warn(line)
    return results


def _check_programs(buzz_bin_dir: Path | None) -> None:
    directory = buzz_bin_dir or scripts_dir()
    missing = [
        name
        for name in AGENT_PROGRAMS
        if not ((directory / name).is_file() and os.access(directory / name, os.X_OK))
    ]
    if missing:
        raise Preflight(f"{directory}: missing executable {', '.join(missing)}")


def _check_jobs_dir(jobs_dir: Path) -> None:
    if UNSAFE_PATH_CHARS.search(str(jobs_dir.absolute())):
        raise Preflight(
            f"jobs dir {jobs_dir.absolute()} contains whitespace or shell metacharacters; "
            "the local verifier substitutes it into a shell script"
        )


def _check_local_harbor_tasks(jobs: tuple[PlannedJob, ...], env: EnvKind) -> None:
    """The local env runs a Harbor task only in the bubblewrap sandbox and only from a
    Dockerfile that does nothing but place files (docs/decisions.md D46); one line per problem."""
    tasks = {task.dir: task for job in jobs for task in job.tasks if task.is_harbor}
    if env is not EnvKind.LOCAL or not tasks:
        return
    problems = []
    support = sandbox_support()
    if support.program is None:
        problems.append(
            f"Harbor tasks run in the local env only in the bubblewrap sandbox ({support.problem}); "
            "use --env docker"
        )
    for task in tasks.values():
        try:
            read_local_image(task.paths.environment_dir)
        except LocalImageError as error:
            problems.append(str(error))
    if problems:
        raise Preflight("\n".join(problems))


def _check_resumable(
    jobs: tuple[PlannedJob, ...], condition: Condition, env: EnvKind, jobs_dir: Path
) -> None:
    """Refuse before anything starts: a job that exists with another identity, or whose
    documents do not load (`DocumentError` naming the file and field)."""
    for job in jobs:
        paths = JobPaths.of(jobs_dir, job.name)
        stored = JobConfig.load_if_readable(paths.config_json)
        if stored is None:
            continue
        current = replay_record(replay_components(condition, env, job.attempts, job.tasks))
        changed = differing_fields(stored.replay_identity, current)
        if changed:
            raise JobConfigMismatch(
                f"job {job.name} exists with a different configuration ({', '.join(changed)}); "
                "choose another --job-name"
            )
        JobResult.load_if_readable(paths.result_json)
        scan_trials(paths)
        check_job_free(paths)


def preflight(
    scope: RunScope,
    condition: Condition,
    modes: Modes,
    config: RunConfig,
    *,
    allow_missing_keys: bool = False,
) -> dict[str, str]:
    """Every check that needs no stack, after the condition's own (`check_condition`), in
    the real run's order, for the real run and `--dry-run` alike (`Refused` with the real
    run's exit code); the API keys."""
    try:
        _check_resumable(scope.jobs, condition, modes.env, scope.jobs_dir)
    except (JobConfigMismatch, DocumentError) as error:
        raise Refused(RunEnd.USAGE, str(error)) from None
    except JobInUse as error:
        raise Refused(RunEnd.PREFLIGHT, str(error)) from None
    try:
        api_keys = api_keys_of(condition, allow_missing=allow_missing_keys)
        _check_programs(config.trial.buzz_bin_dir)
        _check_jobs_dir(scope.jobs_dir)
        _check_local_harbor_tasks(scope.jobs, modes.env)
    except Preflight as error:
        missing_keys = isinstance(error, MissingKeys)
        raise Refused(RunEnd.PREFLIGHT, str(error), missing_keys=missing_keys) from None
    return api_keys
