"""Job directories laid out exactly as orchestrator.md §10 describes, built from short specs.

The job `result.json` is written by the orchestrator's own `JobResultRecorder`, the configs and
trial results are checked against the document models, and trial files are placed through
`orchestra.paths`, so a layout or schema change shows up here instead of drifting silently.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestra.documents.job import JobConfig
from orchestra.documents.trial import TrialConfig, TrialResult
from orchestra.jobs.identity import replay_record
from orchestra.jobs.result import JobResultRecorder
from orchestra.jsonio import write_json_atomic
from orchestra.paths import JobPaths, TrialPaths, make_trial_name

USER = "John Vincent Doe"
AGENT = "solo-1"
CHANNEL = "6a26f1b0-4616-4e0d-84fc-b60b2a1801b3"
CONDITION = "buzz-native-solo-oracle"
MANIFEST_SHA = "5f32d5568047fc7b6adb120eeed8774be5e0e7b1f8d50d75f2fb5b761d8d3161"
BASE_TIME = 1_795_985_417
ROLES = {USER: "user", AGENT: "orchestrator"}


def pubkey_of(name: str) -> str:
    return hashlib.sha256(f"identity:{name}".encode()).hexdigest()


@dataclass(frozen=True)
class Msg:
    author: str
    content: str
    reply_to: int | None = None  # index of the message answered (a NIP-10 marked reply)
    mentions: tuple[str, ...] = ()  # names p-tagged
    scripted: str | None = None  # scripted event label


def default_messages() -> list[Msg]:
    return [
        Msg(USER, "@solo-1 What is 12 x 37 x 12?", mentions=(AGENT,)),
        Msg(AGENT, f"@{USER} The answer is 5,328.", reply_to=0, mentions=(USER,)),
    ]


#: What a scored sample trial's verifier judged (§10.3), hashes made up.
SAMPLE_VERIFIER_INPUTS: dict[str, Any] = {
    "evidence_sha256": "e" * 64,
    "files": [
        {"path": "/logs/artifacts/buzz-evidence.json", "source": "evidence", "sha256": "e" * 64,
         "size": 1200},
        {"path": "/tests/test.sh", "source": "tests", "sha256": "a" * 64, "size": 210},
        {"path": "/home/buzz/<notes>.md", "source": "fixture", "sha256": "f" * 64, "size": 42},
    ],
}  # fmt: skip


@dataclass
class TrialSpec:
    task: str  # short name, e.g. "user-mention"
    attempt: int = 1
    layer: str = "regression"
    status: str = "scored"
    rewards: dict[str, float] | None = None
    details: dict[str, Any] | None = None
    messages: list[Msg] = field(default_factory=default_messages)
    graded: int | None = -1  # index of the message the verifier selected (None: no selection)
    directory: tuple[str, ...] = ()  # bot names of the fixture directory
    stop_reason: str | None = "turn_end"
    exception_type: str | None = None
    tokens: tuple[int, int, int] = (5000, 100, 150)
    cache_write_input: int = 0  # prompt tokens written to the provider's cache (part of input)
    cost_usd: float = 0.01
    seconds: int = 10
    evidence: bool = True
    flags: tuple[str, ...] = ()  # the trial's liveness flags, also its one seat's

    @property
    def task_name(self) -> str:
        return f"buzz-native/{self.task}"


def _timestamp(offset: int) -> str:
    return datetime.fromtimestamp(BASE_TIME + offset, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def message_id(trial_name: str, index: int) -> str:
    return hashlib.sha256(f"{trial_name}:{index}".encode()).hexdigest()


def _evidence(spec: TrialSpec, trial_name: str) -> dict[str, Any]:
    pubkeys = {name: pubkey_of(name) for name in (USER, AGENT, *spec.directory)}
    messages = []
    for index, msg in enumerate(spec.messages):
        tags = [["h", CHANNEL]]
        reply_to = None if msg.reply_to is None else message_id(trial_name, msg.reply_to)
        if reply_to:
            tags.append(["e", reply_to, "", "reply"])
        tags += [["p", pubkeys[name]] for name in msg.mentions]
        role = ROLES.get(msg.author, "bot")
        messages.append(
            {
                "id": message_id(trial_name, index),
                "kind": 9,
                "created_at": BASE_TIME + index,
                "pubkey": pubkeys[msg.author],
                "author": msg.author,
                "author_role": role,
                "content": msg.content,
                "tags": tags,
                "channel_id": CHANNEL,
                "reply_to_event_id": reply_to,
                "mentioned_pubkeys": [pubkeys[name] for name in msg.mentions],
            }
        )
    task_id = messages[0]["id"] if messages else None
    return {
        "schema_version": 1,
        "trial": {"run_id": "job", "trial_id": f"id-{trial_name}", "channel_id": CHANNEL},
        "task_name": spec.task,
        "task_event_id": task_id,
        "completion_message_id": messages[-1]["id"] if len(messages) > 1 else None,
        "identities": {
            USER: {"role": "user", "pubkey": pubkeys[USER]},
            AGENT: {"role": "orchestrator", "pubkey": pubkeys[AGENT]},
        },
        "directory": [
            {"identity_id": name, "name": name, "role": "bot", "pubkey": pubkeys[name], "about": ""}
            for name in spec.directory
        ],
        "scripted_events": [
            {
                "label": msg.scripted,
                "event_id": messages[i]["id"],
                "actor": "user" if msg.author == USER else msg.author,
                "reply_to_event_id": task_id,
            }
            for i, msg in enumerate(spec.messages)
            if msg.scripted
        ],
        "observed_channels": [],
        "message_count": len(messages),
        "truncated": False,
        "messages": messages,
    }


def _trial_result(
    spec: TrialSpec, job_name: str, trial_name: str, index: int, condition: str = CONDITION
) -> dict[str, Any]:
    start = index * 100
    scored = spec.status == "scored"
    rewards = spec.rewards if scored else None
    phases = ("setup", "agent", "teardown", "evidence", "verify", "finalize")
    step = spec.seconds / len(phases)
    cache_write = {"cache_write_input": spec.cache_write_input} if spec.cache_write_input else {}
    return {
        "schema_version": 1,
        "trial_id": f"id-{trial_name}",
        "trial_name": trial_name,
        "job_name": job_name,
        "task_name": spec.task_name,
        "short_name": spec.task,
        "layer": spec.layer,
        "attempt": spec.attempt,
        "condition": condition,
        "manifest_sha256": MANIFEST_SHA,
        "status": spec.status,
        "phase": "finalize" if scored else "agent",
        "stop_reason": spec.stop_reason,
        "reward": rewards["reward"] if rewards else None,
        "rewards": rewards,
        "verifier": {"exit_code": 0, "timed_out": False, "network": "not-isolated", "details_error": None}
        if scored
        else None,
        "verifier_inputs": SAMPLE_VERIFIER_INPUTS if scored else None,
        "started_at": _timestamp(start),
        "finished_at": _timestamp(start + spec.seconds),
        "timings": {
            "agent_active_seconds": 1.5,
            **{
                phase: {
                    "started_at": _timestamp(start),
                    "finished_at": _timestamp(start),
                    "seconds": step,
                }
                for phase in phases
            },
        },
        "tokens": {
            "input": spec.tokens[0],
            "cached_input": spec.tokens[1],
            "output": spec.tokens[2],
            **cache_write,
            "per_agent": {
                AGENT: {
                    "input": spec.tokens[0],
                    "cached_input": spec.tokens[1],
                    "output": spec.tokens[2],
                    **cache_write,
                    "turns": 1,
                    "cost_usd": spec.cost_usd,
                }
            },
        },
        "cost_usd": spec.cost_usd,
        "accounting": "event_log",
        "cached_estimated": False,
        "budget_exceeded": None,
        **({"flags": list(spec.flags)} if spec.flags else {}),
        "buzz": {
            "channel_id": CHANNEL,
            "channel_name": f"{spec.task}-x",
            "task_event_id": message_id(trial_name, 0),
            "completion_message_id": None,
            "scripted_events": [],
            "evidence_exported": spec.evidence,
            "user": {"name": USER, "pubkey": pubkey_of(USER)},
            "agents": [
                {"agent_id": AGENT, "role": "solo", "kind": "orchestrator", "endpoint": "oracle",
                 "pubkey": pubkey_of(AGENT)}
                | ({"requests": 2, "active_seconds": 1.5, "flags": list(spec.flags)}
                   if spec.flags else {})
            ],
        },
        "secret_scan": {"redactions": 0, "files": []},
        "exception_info": None
        if spec.exception_type is None
        else {
            "exception_type": spec.exception_type,
            "exception_message": f"{spec.exception_type} happened",
            "exception_traceback": "Traceback (most recent call last):\n  ...\n",
            "occurred_at": _timestamp(start + spec.seconds),
            "phase": "agent",
        },
    }  # fmt: skip


def _write_trial(paths: TrialPaths, spec: TrialSpec, result: dict[str, Any]) -> None:
    TrialConfig.model_validate(
        {
            "schema_version": 1,
            "trial_id": result["trial_id"],
            "trial_name": paths.name,
            "job_name": result["job_name"],
            "task": {"name": spec.task_name, "short_name": spec.task, "dir": f"tasks/buzz-native/{spec.task}",
                     "layer": spec.layer, "digest": "0" * 64},
            "attempt": spec.attempt,
            "condition": result["condition"],
            "manifest_sha256": MANIFEST_SHA,
            "environment": "local",
            "timeouts": {"agent_seconds": 600.0, "verifier_seconds": 120.0},
            "roster": [{"agent_id": AGENT, "class_id": "solo", "kind": "orchestrator", "role": "solo",
                        "endpoint": "oracle", "model_revision": "oracle"}],
        },
    ).write(paths.config_json)  # fmt: skip
    TrialResult.model_validate(result).write(paths.result_json)
    paths.trial_log.write_text("00:00:00.000 phase setup\n", encoding="utf-8")
    paths.buzz_dir.mkdir(parents=True, exist_ok=True)
    paths.system_prompt(AGENT).write_text("# Buzz agent\n", encoding="utf-8")
    paths.stdout_log(AGENT).write_text("", encoding="utf-8")
    paths.stderr_log(AGENT).write_text("agent started\n", encoding="utf-8")
    paths.events_log(AGENT).write_text('{"type": "turn_end"}\n', encoding="utf-8")
    if spec.evidence:
        evidence = _evidence(spec, paths.name)
        write_json_atomic(paths.evidence_json, evidence, ensure_ascii=True)
        write_json_atomic(paths.artifacts_evidence_json, evidence, ensure_ascii=True)
        write_json_atomic(
            paths.transcript_json,
            {key: evidence[key] for key in ("message_count", "truncated", "messages")}
            | {"channel_id": CHANNEL},
            ensure_ascii=True,
        )
    else:
        paths.evidence_error_txt.write_text("EvidenceExportError: relay gone\n", encoding="utf-8")
    if result["rewards"] is not None:
        write_json_atomic(paths.reward_json, result["rewards"])
        details = dict(spec.details or {})
        if spec.graded is not None and spec.evidence:
            index = spec.graded % len(spec.messages)
            details.setdefault("selected_message_id", message_id(paths.name, index))
        write_json_atomic(paths.details_json, details)
        paths.test_stdout.write_text("verifier ran\n", encoding="utf-8")


def build_job(
    jobs_dir: Path,
    name: str,
    trials: list[TrialSpec],
    *,
    attempts: int = 1,
    condition: str = CONDITION,
    timeout_multiplier: float = 1.0,
    endpoints: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write `<jobs_dir>/<name>/` with its config, trials and job result; return the job dir.
    `endpoints`: the config's endpoint records (default: the oracle), also in the identity."""
    identity: dict[str, Any] = {"condition": MANIFEST_SHA}
    if endpoints is not None:
        identity["endpoints"] = endpoints
    paths = JobPaths.of(jobs_dir, name)
    tasks: dict[str, TrialSpec] = {}
    for spec in trials:
        tasks.setdefault(spec.task_name, spec)
    layers = {spec.layer for spec in trials}
    config = {
        "schema_version": 1,
        "job_name": name,
        "id": f"uuid-{name}",
        "created_at": _timestamp(0),
        "orchestrator_version": "0.0.0",
        "replay_identity": replay_record(identity).model_dump(),
        "plan": {
            "layer": layers.pop() if len(layers) == 1 else "mixed",
            "attempts": attempts,
            "tasks": [
                {"name": t.task_name, "short_name": t.task, "dir": f"tasks/buzz-native/{t.task}",
                 "layer": t.layer, "digest": "0" * 64}
                for t in tasks.values()
            ],
        },
        "manifest": {"path": "manifests/buzz-native-solo-oracle.yaml", "sha256": MANIFEST_SHA,
                     "condition": condition, "normalized": {}},
        "endpoints": endpoints or {"oracle": {"provider": "oracle", "api_key_env": None,
                                              "base_url": None, "env_keys": []}},
        "stack": {"mode": "embedded", "relay_ws_url": "ws://127.0.0.1:3600",
                  "relay_http_url": "http://127.0.0.1:3600", "agent_relay_url": "ws://127.0.0.1:3600",
                  "database": True},
        "environment": "local",
        "options": {"n_concurrent": 1, "timeout_multiplier": timeout_multiplier, "keep_channels": False,
                    "jobs_dir": str(jobs_dir), "state_dir": ".benchmark", "relay_port": 3600,
                    "buzz_bin_dir": None, "endpoint_config": "endpoints/oracle.json",
                    "artifact_root": "."},
        "resumes": [],
    }  # fmt: skip
    paths.root.mkdir(parents=True, exist_ok=True)
    job_config = JobConfig.model_validate(config)
    job_config.write(paths.config_json)
    job_result = JobResultRecorder(paths, job_config, n_planned=len(tasks) * attempts)
    for index, spec in enumerate(trials):
        trial_name = make_trial_name(
            spec.task, suffix=f"{index:07d}".translate(str.maketrans("0123456789", "abcdefghij"))
        )
        result = _trial_result(spec, name, trial_name, index, condition)
        _write_trial(paths.trial(trial_name), spec, result)
        job_result.seed([TrialResult.model_validate(result)])
    job_result.write()
    return paths.root
