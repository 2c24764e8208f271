"""Every on-disk and in-container path of the orchestrator, in one place.

Pure: nothing here touches the filesystem. Host paths are `Path`, container paths are
`PurePosixPath`. Sections: repository defaults (orchestrator.md §1, §2.2), the state
directory (§5.2), the jobs directory (§10.1) and the environment's logical paths (§5.8),
including the local-env verifier mapping (§9.3).
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath

# --- repository layout (relative to the repository root / the working directory) ---------

DEFAULT_DATASET = Path("tasks/buzz-native")
DEFAULT_MANIFEST = Path("manifests/buzz-native-solo-oracle.yaml")
DEFAULT_ENDPOINT_CONFIG = Path("endpoints/oracle.json")
DEFAULT_JOBS_DIR = Path("jobs")
DEFAULT_STATE_DIR = Path(".benchmark")

#: The repository checkout this package was imported from (editable install layout).
PROJECT_ROOT = Path(__file__).absolute().parent.parent
#: The task `orchestra task new` writes, placeholders unfilled (package data: in a wheel too).
TASK_TEMPLATE_DIR = Path(__file__).absolute().parent / "taskkit" / "template"
#: Where a wheel installs its copies of the root's `RepoPaths` files (pyproject's data-files): a
#: Ray node installs the wheel and has no checkout.
INSTALLED_ASSETS = Path(sys.prefix) / "share" / "buzz-orchestra"


@dataclass(frozen=True)
class RepoPaths:
    """Files the project ships at its repository root."""

    root: Path

    @property
    def docker_compose(self) -> Path:
        return self.root / "docker-compose.yml"

    @property
    def testbed(self) -> Path:
        return self.root / "testbed"

    @property
    def relay_dockerfile(self) -> Path:
        return self.testbed / "relay.Dockerfile"

    @property
    def agent_layer_dockerfile(self) -> Path:
        return self.testbed / "agent-layer.Dockerfile"

    @property
    def benchmark_schema_sql(self) -> Path:
        return self.testbed / "benchmark_schema.sql"


# --- task directory (dataset.md §2.1) -------------------------------------------------------

TESTS_DIR_NAME = "tests"
SOLUTION_DIR_NAME = "solution"


@dataclass(frozen=True)
class TaskPaths:
    """Files of one Harbor-format task directory."""

    root: Path

    @property
    def task_toml(self) -> Path:
        return self.root / "task.toml"

    @property
    def instruction_md(self) -> Path:
        return self.root / "instruction.md"

    @property
    def fixture_toml(self) -> Path:
        return self.root / "buzz-fixture.toml"

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.root / TESTS_DIR_NAME

    @property
    def test_sh(self) -> Path:
        return self.tests_dir / "test.sh"

    @property
    def solution_dir(self) -> Path:
        return self.root / SOLUTION_DIR_NAME

    @property
    def solve_sh(self) -> Path:
        return self.solution_dir / "solve.sh"


# --- state directory (§5.2, §5.3, §5.4, §5.9) ------------------------------------------------


@dataclass(frozen=True)
class StatePaths:
    root: Path

    @property
    def state_json(self) -> Path:
        return self.root / "state.json"

    @property
    def compose_env(self) -> Path:
        """The Docker stack's env file (`--env-file`), mode 0600."""
        return self.root / ".env"

    @property
    def wheelhouse_root(self) -> Path:
        return self.root / "wheelhouse"

    def wheelhouse(self, target: str) -> Path:
        """Wheels for one target interpreter, e.g. `cp312-x86_64-glibc`."""
        return self.wheelhouse_root / target

    @property
    def embedded(self) -> Path:
        return self.root / "embedded"

    @property
    def embedded_pg(self) -> Path:
        return self.embedded / "pg"

    @property
    def relay_log(self) -> Path:
        return self.embedded / "relay.log"

    @property
    def relay_pid(self) -> Path:
        return self.embedded / "relay.pid"

    @property
    def embedded_owner(self) -> Path:
        """Locked by the process that started the embedded stack and will stop it."""
        return self.embedded / "owner.lock"

    @property
    def floor_cache(self) -> Path:
        """The do-nothing floor per task contract (`<contract digest>.json`, D114)."""
        return self.root / "floor"

    def floor_record(self, contract_digest: str) -> Path:
        return self.floor_cache / f"{contract_digest}.json"


# --- jobs directory (§10.1) -------------------------------------------------------------------

_BASE32_LOWER = "abcdefghijklmnopqrstuvwxyz234567"
TRIAL_SHORT_NAME_CHARS = 32
TRIAL_SUFFIX_CHARS = 7


def make_trial_name(short_name: str, suffix: str | None = None) -> str:
    """`<short name, first 32 chars>__<7 random lowercase base32 chars>` (§7.2 step 1)."""
    if suffix is None:
        suffix = "".join(secrets.choice(_BASE32_LOWER) for _ in range(TRIAL_SUFFIX_CHARS))
    return f"{short_name[:TRIAL_SHORT_NAME_CHARS]}__{suffix}"


RUN_RECORD_NAME = "run.json"


@dataclass(frozen=True)
class RunPaths:
    """`<jobs-dir>/<run name>/`: the run record and the run's job directories."""

    root: Path

    @classmethod
    def of(cls, jobs_dir: Path, run_name: str) -> RunPaths:
        return cls(jobs_dir / run_name)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def run_json(self) -> Path:
        return self.root / RUN_RECORD_NAME

    def job(self, job_name: str) -> JobPaths:
        return JobPaths(self.root / job_name)

    @property
    def floor_json(self) -> Path:
        """The do-nothing floor of the run's tasks (D114); its floor job is `job(FLOOR_JOB)`."""
        return self.root / "floor.json"


@dataclass(frozen=True)
class JobPaths:
    """`<jobs-dir>/<run name>/<job name>/` (or `<jobs-dir>/<job name>/` from before runs)."""

    root: Path

    @classmethod
    def of(cls, jobs_dir: Path, job_name: str) -> JobPaths:
        return cls(jobs_dir / job_name)

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def config_json(self) -> Path:
        return self.root / "config.json"

    @property
    def result_json(self) -> Path:
        return self.root / "result.json"

    @property
    def job_log(self) -> Path:
        return self.root / "job.log"

    @property
    def superseded_dir(self) -> Path:
        return self.root / ".superseded"

    @property
    def lock(self) -> Path:
        """Locked by the process running the job (orchestra.locks.OwnerLock)."""
        return self.root / ".lock"

    def superseded(self, trial_name: str) -> Path:
        """Where a trial directory replaced on resume is moved (§2.5)."""
        return self.superseded_dir / trial_name

    def incoming(self, trial_name: str) -> Path:
        """Where a trial directory packed on a Ray node is unpacked and checked before it is
        renamed into place (scale-out.md §5 step 3)."""
        return self.root / ".incoming" / trial_name

    def trial(self, trial_name: str) -> TrialPaths:
        return TrialPaths(self.root / trial_name)


#: A Ray node's scratch space, unless `ORCHESTRA_NODE_DIR` says otherwise (short: the embedded
#: PostgreSQL's Unix socket lives under it).
DEFAULT_NODE_ROOT = Path("/tmp/buzz-node")


@dataclass(frozen=True)
class NodePaths:
    """`<node root>/<job id>-<node id>/`: one node host's directory on its node (scale-out.md
    §2): the node's state dir (its stack), the job's tasks as unpacked, and the job directory
    its trials run in, with the trial directory's layout (§10.1)."""

    root: Path

    @classmethod
    def of(cls, node_root: Path, job_id: str, node_id: str) -> NodePaths:
        return cls(node_root / f"{job_id[:8]}-{node_id[:12]}")

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def tasks_dir(self) -> Path:
        return self.root / "tasks"

    @property
    def artifacts_dir(self) -> Path:
        """The manifest's artifacts (prompts, personas, skills) as the driver sent them."""
        return self.root / "artifacts"

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"


#: The verifier's stdout and stderr, in its verifier directory (§9.3).
VERIFIER_OUTPUT_NAME = "test-stdout.txt"


@dataclass(frozen=True)
class TrialPaths:
    """`<job>/<trial name>/` and everything under it."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def config_json(self) -> Path:
        return self.root / "config.json"

    @property
    def result_json(self) -> Path:
        return self.root / "result.json"

    @property
    def trial_log(self) -> Path:
        return self.root / "trial.log"

    # agent/ -- host side of /logs/agent
    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    @property
    def buzz_dir(self) -> Path:
        """`agent/buzz/`: prompts, agent logs, oracle log, evidence copies."""
        return self.agent_dir / "buzz"

    def system_prompt(self, agent_id: str) -> Path:
        return self.buzz_dir / f"{agent_id}.system-prompt.md"

    def stdout_log(self, agent_id: str) -> Path:
        return self.buzz_dir / f"{agent_id}.stdout.log"

    def stderr_log(self, agent_id: str) -> Path:
        return self.buzz_dir / f"{agent_id}.stderr.log"

    def events_log(self, agent_id: str) -> Path:
        """The host copy of the agent's ACP event log (§7.10)."""
        return self.buzz_dir / event_log_name(agent_id)

    def trajectory_log(self, agent_id: str) -> Path:
        """The host copy of the agent's trajectory side file (agent-harness.md §2.13)."""
        return self.buzz_dir / trajectory_log_name(agent_id)

    def trajectory(self, agent_id: str) -> Path:
        """The agent's ATIF trajectory, assembled from its side file at teardown (§7.16)."""
        return self.buzz_dir / f"{agent_id}.trajectory.json"

    @property
    def harbor_solve_record(self) -> Path:
        """The host copy of the oracle's `harbor-solve.sh` for a Harbor task."""
        return self.buzz_dir / HARBOR_SOLVE.name

    @property
    def oracle_log(self) -> Path:
        return self.buzz_dir / "oracle.jsonl"

    @property
    def fixture_files_dir(self) -> Path:
        return self.buzz_dir / "fixture-files"

    def fixture_file_record(self, container_path: str) -> Path:
        """The saved copy of a rendered fixture file (§6): `<path without leading />`."""
        return self.fixture_files_dir / container_path.lstrip("/")

    @property
    def evidence_json(self) -> Path:
        return self.buzz_dir / EVIDENCE_FILE_NAME

    @property
    def transcript_json(self) -> Path:
        return self.buzz_dir / "transcript.json"

    @property
    def evidence_error_txt(self) -> Path:
        return self.buzz_dir / "buzz-evidence-error.txt"

    # verifier/ -- host side of /logs/verifier
    @property
    def verifier_dir(self) -> Path:
        return self.root / "verifier"

    @property
    def reward_json(self) -> Path:
        return self.verifier_dir / "reward.json"

    @property
    def reward_txt(self) -> Path:
        return self.verifier_dir / "reward.txt"

    @property
    def details_json(self) -> Path:
        return self.verifier_dir / "details.json"

    @property
    def test_stdout(self) -> Path:
        return self.verifier_dir / VERIFIER_OUTPUT_NAME

    @property
    def test_local_sh(self) -> Path:
        return self.verifier_dir / "test.local.sh"

    # artifacts/ -- host side of /logs/artifacts
    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    @property
    def artifacts_evidence_json(self) -> Path:
        return self.artifacts_dir / EVIDENCE_FILE_NAME

    # verifier-inputs/ -- the verifier's world, rebuilt from the harness's copies (§9)
    @property
    def verifier_inputs_dir(self) -> Path:
        return self.root / "verifier-inputs"

    def verifier_input(self, container_path: PurePath | str) -> Path:
        """Where the verifier input at `container_path` is written on the host."""
        return self.verifier_inputs_dir / str(container_path).lstrip("/")

    # local env only
    @property
    def sandbox(self) -> Path:
        return self.root / "sandbox"

    def local_env(self, home: str | None) -> EnvPaths:
        """The logical paths of §5.8 for this trial's local env."""
        return EnvPaths.local(self, home)

    def verifier_path_map(self, home: str | None) -> tuple[tuple[str, Path], ...]:
        """Container prefix → host path for the local verifier (§9.3), longest prefix first.

        Every input prefix points into `verifier-inputs/` (nothing of the sandbox, whatever
        the agents left there); `/logs/agent` and `/solution` hold nothing there, as in a
        docker verifier container."""
        prefixes = [LOGS_ARTIFACTS, LOGS_AGENT, CONTAINER_TESTS, CONTAINER_SOLUTION]
        if home is not None:
            prefixes.append(PurePosixPath(home))
        pairs = [(str(prefix), self.verifier_input(prefix)) for prefix in prefixes]
        pairs.append((str(LOGS_VERIFIER), self.verifier_dir))
        return tuple(sorted(pairs, key=lambda pair: len(pair[0]), reverse=True))


# --- environment paths (§5.8) -------------------------------------------------------------------

EVIDENCE_FILE_NAME = "buzz-evidence.json"
DEFAULT_HOME = "/root"

CONTAINER_WORKSPACE = PurePosixPath("/workspace")
CONTAINER_TMP = PurePosixPath("/tmp")
#: The fork server (orchestra/agents/forkserver) inside a local-env tree's sandbox: its socket,
#: its client script (also bound over the programs it serves: a command that is this file is
#: served) and the tree's first process, bound into the sandbox's private /tmp.
FORK_SERVER_IN_SANDBOX = CONTAINER_TMP / "buzz-fork-server"
FORK_SERVER_SOCKET = FORK_SERVER_IN_SANDBOX / "socket"
FORK_CLIENT = FORK_SERVER_IN_SANDBOX / "client"
FORK_HOLDER_NAME = "buzz-tree-init"  # also its name in `ps`
FORK_HOLDER = FORK_SERVER_IN_SANDBOX / FORK_HOLDER_NAME


@dataclass(frozen=True)
class ForkServerPaths:
    """The fork server's directory on the host: a private temporary directory (a unix socket's
    path must stay short), made by the orchestrator that runs the server."""

    root: Path

    @property
    def socket(self) -> Path:
        return self.root / "socket"

    @property
    def client(self) -> Path:
        """The client script, bound over the agent programs' console scripts in sandboxes."""
        return self.root / "client"

    @property
    def holder(self) -> Path:
        return self.root / FORK_HOLDER_NAME

    @property
    def owner(self) -> Path:
        """The orchestrator that made the directory: `pid start-time` (`forked.sweep_abandoned`)."""
        return self.root / "owner"


OPT_BUZZ = PurePosixPath("/opt/buzz")
CONTAINER_VENV_BIN = OPT_BUZZ / "venv" / "bin"
CONTAINER_BUZZ_BIN_DIR = OPT_BUZZ / "bin"
CONTAINER_PROMPTS = OPT_BUZZ / "prompts"
CONTAINER_RUNTIME_LOGS = OPT_BUZZ / "logs"
CONTAINER_ENV_DIR = OPT_BUZZ / "env"
LOGS = PurePosixPath("/logs")
LOGS_AGENT = LOGS / "agent"
LOGS_ARTIFACTS = PurePosixPath("/logs/artifacts")
LOGS_VERIFIER = PurePosixPath("/logs/verifier")
CONTAINER_TESTS = PurePosixPath("/tests")
CONTAINER_TEST_SH = CONTAINER_TESTS / "test.sh"
CONTAINER_SOLUTION = PurePosixPath("/solution")
CONTAINER_EVIDENCE = LOGS_ARTIFACTS / EVIDENCE_FILE_NAME
HARBOR_SOLVE = OPT_BUZZ / "harbor-solve.sh"


def event_log_name(agent_id: str) -> str:
    return f"{agent_id}.events.jsonl"


def trajectory_log_name(agent_id: str) -> str:
    return f"{agent_id}.trajectory.jsonl"


def system_prompt_name(agent_id: str) -> str:
    return f"{agent_id}.system-prompt.md"


def container_env_file(agent_id: str) -> PurePosixPath:
    """The agent's `KEY='value'` env file inside the container (§7.9); removed on start."""
    return CONTAINER_ENV_DIR / f"{agent_id}.env"


@dataclass(frozen=True)
class EnvPaths:
    """The logical paths agents see (§5.8), for one environment kind. (Verifiers see none of
    them: their world is `TrialPaths.verifier_inputs_dir`, §9.)

    docker env: container paths (`PurePosixPath`); local env: host paths (`Path`).
    `root` is where absolute container paths land (`/`, or the local sandbox); `tmpdir` is
    None in the docker env (agents use the container's `/tmp`, TMPDIR unset).
    """

    root: PurePath
    workspace: PurePath
    home: PurePath
    tmpdir: PurePath | None
    prompts_dir: PurePath
    runtime_logs_dir: PurePath
    logs_artifacts: PurePath
    solution: PurePath

    @classmethod
    def docker(cls, home: str | None) -> EnvPaths:
        return cls(
            root=PurePosixPath("/"),
            workspace=CONTAINER_WORKSPACE,
            home=PurePosixPath(home or DEFAULT_HOME),
            tmpdir=None,
            prompts_dir=CONTAINER_PROMPTS,
            runtime_logs_dir=CONTAINER_RUNTIME_LOGS,
            logs_artifacts=LOGS_ARTIFACTS,
            solution=CONTAINER_SOLUTION,
        )

    @classmethod
    def local(cls, trial: TrialPaths, home: str | None) -> EnvPaths:
        return cls(
            root=trial.sandbox,
            workspace=trial.sandbox / "workspace",
            home=trial.sandbox / (home or DEFAULT_HOME).lstrip("/"),
            tmpdir=trial.sandbox / "tmp",
            prompts_dir=trial.buzz_dir,
            runtime_logs_dir=trial.buzz_dir,
            logs_artifacts=trial.artifacts_dir,
            solution=trial.sandbox / "solution",
        )

    def system_prompt(self, agent_id: str) -> PurePath:
        return self.prompts_dir / system_prompt_name(agent_id)

    def events_log(self, agent_id: str) -> PurePath:
        """`BUZZ_ACP_EVENT_LOG` for this agent."""
        return self.runtime_logs_dir / event_log_name(agent_id)

    def trajectory_log(self, agent_id: str) -> PurePath:
        """`BUZZ_AGENT_TRAJECTORY_LOG` for this agent."""
        return self.runtime_logs_dir / trajectory_log_name(agent_id)

    @property
    def solve_sh(self) -> PurePath:
        return self.solution / "solve.sh"

    @property
    def harbor_solve(self) -> PurePath:
        """What the oracle runs for a Harbor task: `solve.sh`, then the done marker Harbor's
        scripts do not write (§4.5)."""
        return self.root / HARBOR_SOLVE.relative_to("/")

    def solve_state_dir(self, channel_id: str) -> PurePath:
        """`${TMPDIR:-/tmp}/buzz-solve-<channel id>` as the agents see it (§4.5)."""
        return (self.tmpdir or CONTAINER_TMP) / f"buzz-solve-{channel_id}"

    def fixture_file(self, container_path: str) -> PurePath:
        """Where a fixture file declared at `container_path` (under `home`) is placed."""
        return self.root / container_path.lstrip("/")
