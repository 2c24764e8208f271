"""Aggregation of trial results per condition, layer and task (orchestrator.md §11.1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from pathlib import Path

from orchestra.config.task import LAYERS, Layer
from orchestra.documents.enums import Flag, TrialStatus
from orchestra.documents.floor import TaskFloor
from orchestra.documents.job import EndpointRecord, JobConfig, PlanRecord
from orchestra.documents.summary import (
    AgentSummary,
    ConditionSummary,
    ConfirmationCount,
    GroupPassAtK,
    GroupSummary,
    JobRef,
    LayerSummary,
    Summary,
    TaskPassAtK,
    TaskSummary,
)
from orchestra.documents.trial import AgentTokens, BuzzAgent, TokenCounts, TrialResult
from orchestra.jobs.floor import floor_summary
from orchestra.jobs.tally import TOKEN_FIELDS, Counted, Tally, token_tuple

LAYER_ORDER = LAYERS


@dataclass(frozen=True)
class PlannedTask:
    name: str
    layer: Layer
    digest: str = ""  # the task files' digest (compare flags a task whose files changed)
    contract_digest: str = ""  # without `solution/` (the results history pools by it)
    verifier_digest: str = ""  # `tests/` alone (compare flags a task graded by another verifier)


@dataclass
class JobRecord:
    """One job as read from its directory: the plan and the trial results it holds."""

    name: str
    path: str
    condition: str
    manifest_sha256: str
    attempts: int
    tasks: list[PlannedTask]
    trials: list[TrialResult] = field(default_factory=list)
    oracle: bool = False  # the roster runs the built-in oracle, not a model
    started: bool = True  # False: a job of a run's plan whose directory does not exist yet
    stopped: str | None = None  # the job result's early stop, if any
    stop_message: str | None = None
    spent_usd: float | None = None
    #: endpoint name -> the model id its agents send (`served_models`); part of the grouping
    models: dict[str, str] = field(default_factory=dict)
    #: task name -> its do-nothing floor, from the run's `floor.json` (`jobs.floor`)
    floor: dict[str, TaskFloor] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: JobConfig, path: Path) -> JobRecord:
        """The plan part of the record (no trials yet)."""
        return cls.of_plan(
            config.job_name, path, config.manifest.condition, config.manifest.sha256,
            config.plan, oracle=config.is_oracle, models=served_models(config.endpoints),
        )  # fmt: skip

    @classmethod
    def of_plan(
        cls,
        name: str,
        path: Path,
        condition: str,
        manifest_sha256: str,
        plan: PlanRecord,
        *,
        oracle: bool,
        models: dict[str, str],
        started: bool = True,
    ) -> JobRecord:
        return cls(
            name=name,
            path=str(path),
            condition=condition,
            manifest_sha256=manifest_sha256,
            attempts=plan.attempts,
            tasks=[
                PlannedTask(
                    task.name,
                    task.layer,
                    task.digest,
                    task.contract_digest or "",
                    task.verifier_digest or "",
                )
                for task in plan.tasks
            ],
            oracle=oracle,
            started=started,
            models=models,
        )

    @property
    def condition_key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """What jobs must share to be pooled as one condition: the name, the manifest hash
        and the model ids served (docs/decisions.md D87: one endpoint name may serve different
        models)."""
        return self.condition, self.manifest_sha256, tuple(sorted(self.models.items()))


def served_models(endpoints: Mapping[str, EndpointRecord]) -> dict[str, str]:
    """Endpoint name -> the model id its agents send: the endpoint's `model`, else its name."""
    return {name: endpoint.model or name for name, endpoint in sorted(endpoints.items())}


def _check_k(n: int, c: int, k: int) -> None:
    """Both estimators exist only for 1 <= k <= n and 0 <= c <= n."""
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(
            f"pass@k and pass^k need 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})"
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator 1 - C(n-c, k) / C(n, k), for 1 <= k <= n."""
    _check_k(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimator of pass^k (all k attempts pass) C(c, k) / C(n, k), for 1 <= k <= n."""
    _check_k(n, c, k)
    return comb(c, k) / comb(n, k)


def _layer_rank(name: str) -> tuple[int, str]:
    return (LAYER_ORDER.index(name) if name in LAYER_ORDER else len(LAYER_ORDER), name)


@dataclass
class ConditionTally:
    """One condition's trials as a `Tally` per (layer, task), with what the plans give each:
    the summary's layers and totals from sums, not from another pass over the trials.

    Attempts beyond their job's k (confirmation reruns of a regressed task) are tallied apart:
    they stay out of every rate and count of the task's row (only regressed tasks get them, so
    counting them would bias the pass rates) and are reported as its `confirmation`; their
    tokens, cost and time are in the usage, as they were spent.

    `aggregate` fills it from scratch; the job `result.json` adds and removes trials as their
    results change (orchestra.jobs.result)."""

    planned: dict[tuple[str, str], int] = field(default_factory=dict)  # 0: a task no plan names
    attempts: dict[tuple[str, str], int] = field(default_factory=dict)  # k of pass@k
    tallies: dict[tuple[str, str], Tally] = field(default_factory=dict)
    confirming: dict[tuple[str, str], Tally] = field(default_factory=dict)  # attempts beyond k

    def plan(self, job: JobRecord) -> None:
        for task in job.tasks:
            key = (task.layer, task.name)
            self.planned[key] = self.planned.get(key, 0) + job.attempts
            self.attempts[key] = max(self.attempts.get(key, 0), job.attempts)
            self.tallies.setdefault(key, Tally())

    def _tally_of(self, trial: Counted, attempts: int) -> Tally:
        key = (trial.layer, trial.task_name)
        if trial.attempt > attempts:
            return self.confirming.setdefault(key, Tally())
        return self.tallies[key]

    def add(self, trial: Counted, attempts: int) -> None:
        """Count a trial in; `attempts`: its job's k (planned attempts)."""
        key = (trial.layer, trial.task_name)
        if key not in self.tallies:
            self.planned[key], self.attempts[key], self.tallies[key] = 0, attempts, Tally()
        self._tally_of(trial, attempts).add(trial)

    def remove(self, trial: Counted, attempts: int) -> None:
        """Take a counted trial back out (its result changed, or it left the job); `attempts`:
        its job's k, as it was counted in."""
        key = (trial.layer, trial.task_name)
        self._tally_of(trial, attempts).remove(trial)
        if key in self.confirming and self.confirming[key].trials == 0:
            del self.confirming[key]
        if self.tallies[key].trials == 0 and key not in self.confirming and not self.planned[key]:
            del self.planned[key], self.attempts[key], self.tallies[key]

    def total(self) -> Tally:
        """Every trial, confirmation attempts included (the job's counts and usage)."""
        return Tally.of([*self.tallies.values(), *self.confirming.values()])

    def count(self, status: TrialStatus) -> int:
        """Trials with `status` (without summing the rest of the tallies)."""
        tallies = [*self.tallies.values(), *self.confirming.values()]
        return sum(tally.statuses[status] for tally in tallies)

    def _used(self, keys: Iterable[tuple[str, str]]) -> Tally:
        """What the trials of `keys` used, confirmation attempts included."""
        return Tally.of(
            [tally for key in keys for tally in (self.tallies[key], self.confirming.get(key))
             if tally is not None]
        )  # fmt: skip

    def layers(self) -> dict[str, LayerSummary]:
        layers: dict[str, LayerSummary] = {}
        for layer in sorted({layer for layer, _ in self.tallies}, key=_layer_rank):
            keys = sorted(key for key in self.tallies if key[0] == layer)
            tasks = {key[1]: self._task_summary(key) for key in keys}
            rated = Tally.of([self.tallies[key] for key in keys])
            summary = _group_summary(tasks, rated, self._used(keys))
            layers[layer] = LayerSummary(**dict(summary), tasks=tasks)
        return layers

    def totals(self, layers: dict[str, LayerSummary]) -> GroupSummary:
        tasks = {name: task for layer in layers.values() for name, task in layer.tasks.items()}
        return _group_summary(tasks, Tally.of(list(self.tallies.values())), self.total())

    def _task_summary(self, key: tuple[str, str]) -> TaskSummary:
        tally, k = self.tallies[key], self.attempts[key]
        n, c = tally.scored, tally.successes
        confirming = self.confirming.get(key)
        return TaskSummary(
            **dict(tally.rates(self.planned[key])),
            **dict(self._used([key]).usage()),
            incomplete=n < k,
            pass_at_k=None if n < k else TaskPassAtK(k=k, value=pass_at_k(n, tally.successes, k)),
            failing_dimensions=tally.failing_dimensions(),
            successes=c,
            pass_at_ks={j: pass_at_k(n, c, j) if j <= n else None for j in range(1, k + 1)},
            pass_hat_ks={j: pass_hat_k(n, c, j) if j <= n else None for j in range(1, k + 1)},
            flaky=0 < c < n,
            confirmation=None
            if confirming is None
            else ConfirmationCount(
                attempts=confirming.trials,
                scored=confirming.scored,
                passes=confirming.successes,
            ),
        )


def _group_summary(tasks: dict[str, TaskSummary], rated: Tally, used: Tally) -> GroupSummary:
    """`rated`: the trials the rates count (attempts up to k); `used`: every trial."""
    with_pass_at_k = [task.pass_at_k.value for task in tasks.values() if task.pass_at_k]
    # A task with fewer scored attempts than k has no pass@k; it is named, not dropped silently
    # (its errors would otherwise raise the mean over the tasks that have one).
    left_out = sorted(name for name, task in tasks.items() if task.pass_at_k is None)
    return GroupSummary(
        **dict(rated.rates(sum(task.planned for task in tasks.values()))),
        **dict(used.usage()),
        pass_at_k=GroupPassAtK(
            value=sum(with_pass_at_k) / len(with_pass_at_k),
            n_tasks=len(with_pass_at_k),
            left_out=left_out,
        )
        if with_pass_at_k
        else None,
        n_tasks=len(tasks),
    )


def aggregate(jobs: Iterable[JobRecord]) -> Summary:
    """The `--json` document of §11.2: `{conditions: [...]}`."""
    by_condition: dict[tuple[str, str, tuple[tuple[str, str], ...]], list[JobRecord]] = {}
    for job in jobs:
        by_condition.setdefault(job.condition_key, []).append(job)
    conditions = []
    for (condition, manifest_sha256, models), records in by_condition.items():
        tally = ConditionTally()
        for job in records:
            tally.plan(job)
            for trial in job.trials:
                tally.add(Counted.of(trial), job.attempts)
        layers = tally.layers()
        by_task: dict[tuple[str, str], list[TrialResult]] = {key: [] for key in tally.tallies}
        for job in records:
            for trial in job.trials:
                by_task[(trial.layer, trial.task_name)].append(trial)
        all_trials = [trial for trials in by_task.values() for trial in trials]
        conditions.append(
            ConditionSummary(
                condition=condition,
                manifest_sha256=manifest_sha256,
                models=dict(models),
                oracle=any(job.oracle for job in records),
                jobs=[
                    JobRef(
                        name=job.name,
                        path=job.path,
                        started=job.started,
                        stopped=job.stopped,
                        stop_message=job.stop_message,
                        spent_usd=job.spent_usd,
                    )
                    for job in records
                ],
                layers=layers,
                totals=tally.totals(layers),
                error_types=_error_types(all_trials),
                agents=agent_summaries(all_trials),
                floor=floor_summary(layers, records),
            )
        )
    return Summary(conditions=conditions)


@dataclass
class _AgentTally:
    agent: BuzzAgent
    trials: int = 0
    messages: int = 0
    tokens: list[int] = field(default_factory=lambda: [0] * len(TOKEN_FIELDS))
    cost_usd: float = 0.0
    requests: int | None = None  # None: no trial recorded the seat's requests
    active_seconds: float = 0.0
    flags: dict[str, int] = field(default_factory=dict)

    def add(self, agent: BuzzAgent, used: AgentTokens | None) -> None:
        self.trials += 1
        self.messages += agent.messages or 0
        if agent.requests is not None:
            self.requests = (self.requests or 0) + agent.requests
        self.active_seconds += agent.active_seconds or 0.0
        for flag in agent.flags:
            self.flags[flag] = self.flags.get(flag, 0) + 1
        if used is not None:
            self.tokens = [sum(pair) for pair in zip(self.tokens, token_tuple(used), strict=True)]
            self.cost_usd += used.cost_usd


def agent_summaries(trials: Sequence[TrialResult]) -> dict[str, AgentSummary]:
    """Per agent id: trials, transcript messages and their share of the agents' messages,
    tokens and cost, summed over `trials` (agents in the order the trials list them)."""
    tallies: dict[str, _AgentTally] = {}
    for trial in trials:
        per_agent = trial.tokens.per_agent if trial.tokens is not None else {}
        for agent in trial.buzz.agents:
            tally = tallies.setdefault(agent.agent_id, _AgentTally(agent))
            tally.add(agent, per_agent.get(agent.agent_id))
    written = sum(tally.messages for tally in tallies.values())
    return {
        agent_id: AgentSummary(
            role=tally.agent.role,
            kind=tally.agent.kind,
            endpoint=tally.agent.endpoint,
            trials=tally.trials,
            messages=tally.messages,
            transcript_share=tally.messages / written if written else None,
            tokens=TokenCounts(**dict(zip(TOKEN_FIELDS, tally.tokens, strict=True))),
            cost_usd=tally.cost_usd,
            requests=tally.requests,
            active_seconds=None if tally.requests is None else round(tally.active_seconds, 3),
            flags={flag.value: tally.flags[flag] for flag in Flag if flag in tally.flags},
        )
        for agent_id, tally in tallies.items()
    }


def _error_types(trials: Iterable[TrialResult]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for trial in trials:
        kind = trial.error_type
        if kind is not None:
            errors.setdefault(kind, []).append(trial.trial_name)
    return errors
