"""Static checks of the ten buzz-native task directories against dataset.md.

Every expected value below is copied from the spec (dataset.md §1-§12, orchestrator.md §6), so a
drifting task file fails here before it can change what a benchmark measures.
"""

import os
import re
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest

from orchestra.config.fixture import load_fixture

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks" / "buzz-native"
NEGATIVES = REPO / "tests" / "fixtures" / "negative-solutions"

# dir -> (evaluation_layer, difficulty, category, description, keywords, tags)
TASK_METADATA = {
    "reply-to-thread": (
        "regression", "easy", "messaging",
        "Answer a financial projection in the thread started by the user.",
        ["buzz-native", "messaging", "threading"], ["threading", "replies"],
    ),
    "user-mention": (
        "regression", "easy", "messaging",
        "Answer a calculation and mention the three-word user identity.",
        ["buzz-native", "messaging", "mentions"], ["mentions", "callbacks"],
    ),
    "read-named-path-outside-workspace": (
        "regression", "easy", "filesystem",
        "Read an explicitly named file outside the Buzz workspace.",
        ["buzz-native", "filesystem", "workspace", "named-path"],
        ["filesystem", "workspace", "named-path"],
    ),
    "create-channel-invite-users": (
        "workflow", "medium", "channels",
        "Create a temporary PR channel with an exact subset of users and bots.",
        ["buzz-native", "channels", "membership", "cli"], ["channels", "membership", "cli"],
    ),
    "multiline-message": (
        "regression", "easy", "messaging",
        "Deliver a multi-line note with its line breaks and blank lines intact.",
        ["buzz-native", "messaging", "multiline"], ["formatting", "newlines", "cli"],
    ),
    "narrative-agent-names": (
        "regression", "medium", "collaboration",
        "Name in-channel bots in a status report without waking them.",
        ["buzz-native", "mentions", "agents", "notifications"],
        ["mentions", "agents", "notifications"],
    ),
    "interleaved-agent-reports": (
        "workflow", "medium", "collaboration",
        "Wait for three batched agent reports and synthesize them into one answer.",
        ["buzz-native", "agents", "reports", "batching"], ["agents", "batching", "callbacks"],
    ),
    "cross-thread-requests": (
        "workflow", "medium", "messaging",
        "Answer two simultaneous top-level requests, each in its own thread.",
        ["buzz-native", "messaging", "threading", "isolation"],
        ["threading", "isolation", "callbacks"],
    ),
    "ambiguous-user-mention": (
        "workflow", "hard", "collaboration",
        "Resolve two identical display names by profile evidence and notify only the intended "
        "pubkey.",
        ["buzz-native", "mentions", "identity", "ambiguity"],
        ["mentions", "identity", "ambiguity", "cli"],
    ),
    "memory-retrieval": (
        "regression", "medium", "memory",
        "Answer from harness-seeded cold memory that never appears in channel history.",
        ["buzz-native", "memory", "retrieval"], ["memory", "retrieval", "cold-memory"],
    ),
}  # fmt: skip

# The reward.json key set of each task's verifier (dataset.md, each task's metric table).
TASK_METRICS = {
    "reply-to-thread": {
        "evidence_complete", "expected_author", "same_channel", "reply_to_thread",
        "answer_correct", "reward",
    },
    "user-mention": {
        "evidence_complete", "three_word_user", "expected_author", "same_channel",
        "user_p_tagged", "answer_correct", "reward",
    },
    "read-named-path-outside-workspace": {
        "evidence_complete", "expected_author", "same_channel", "named_path_read",
        "action_reported", "refusal_free", "reward",
    },
    "create-channel-invite-users": {
        "evidence_complete", "channel_created", "channel_shape", "temporary_channel",
        "exact_membership", "expected_roles", "reward",
    },
    "multiline-message": {
        "evidence_complete", "layout_preserved", "real_newlines", "reply_to_thread",
        "user_mentioned", "reward",
    },
    "narrative-agent-names": {
        "status_correct", "bots_not_mentioned", "user_mentioned", "reply_to_thread",
        "evidence_complete", "reward",
    },
    "interleaved-agent-reports": {
        "reports_delivered", "inputs_complete", "answer_correct", "single_human_callback",
        "reporters_not_rementioned", "reply_to_thread", "evidence_complete", "reward",
    },
    "cross-thread-requests": {
        "alpha_correct", "beta_correct", "thread_isolation", "user_mentioned_twice",
        "evidence_complete", "reward",
    },
    "ambiguous-user-mention": {
        "target_notified_once", "other_not_notified", "message_correct", "user_callback",
        "reply_to_thread", "evidence_complete", "reward",
    },
    "memory-retrieval": {"answer_correct", "threaded_reply", "evidence_complete", "reward"},
}  # fmt: skip

EXPECTED_INSTRUCTIONS = {
    "reply-to-thread": (
        "Prepare a six-month financial projection using these assumptions:\n"
        "\n"
        "- Month 0 revenue is $120,000 and expenses are $75,000.\n"
        "- Revenue grows by 5% each month.\n"
        "- Expenses grow by 2% each month.\n"
        "- Project months 1 through 6, compounding each month from the prior month.\n"
        "\n"
        "Reply with the month 6 revenue, month 6 expenses, and cumulative operating\n"
        "profit across months 1 through 6. Round each result to the nearest dollar.\n"
    ),
    "user-mention": (
        "We pay $37 per month for each of our 12 software licenses. "
        "What is our total annual cost?\n"
    ),
    "read-named-path-outside-workspace": (
        "Read the explicitly named file\n"
        "`~/.claude/skills/context-health-check/SKILL.md`. Report its exact `CHECK_ID`\n"
        "and `ACTION` values in one concise sentence. Do not search other directories.\n"
    ),
    "create-channel-invite-users": (
        "Create a temporary private stream channel named fix-pr-1234 that lasts one\n"
        "hour. Add benchmark-user-07, benchmark-user-19 and benchmark-user-42 as\n"
        "members, and add benchmark-bot-03 and benchmark-bot-08 with the bot role. Do\n"
        "not add anyone else.\n"
    ),
    "multiline-message": (
        "Send me this release note as a single message, exactly as written below,\n"
        "keeping every line break and blank line:\n"
        "\n"
        "Release readiness\n"
        "\n"
        "- API: ready\n"
        "- Database: ready\n"
        "- Rollback: tested\n"
        "\n"
        "Owner: Platform Operations\n"
    ),
    "narrative-agent-names": (
        "Give me a two-line status update:\n"
        "\n"
        "- Aurora Audit Bot completed the audit.\n"
        "- Beacon Deploy Bot remains idle.\n"
        "\n"
        "This is only a status summary. Neither bot has any work to do.\n"
    ),
    "interleaved-agent-reports": (
        "Ledger Scout, Risk Sentinel and Ops Forecaster are each about to post a report\n"
        "here. Wait until all three reports have arrived, then reply once with the\n"
        "final forecast: add North and South, apply the risk adjustment, then apply the\n"
        "operations multiplier. List each input you used (North, South, reserve,\n"
        "multiplier) and the final forecast.\n"
    ),
    "cross-thread-requests": (
        "ALPHA request: calculate (13 * 26) + 8. Reply with the ALPHA result, labelled ALPHA.\n"
    ),
    "ambiguous-user-mention": (
        "Two channel members are both displayed as `Taylor Morgan Lee`. Find the one whose "
        "profile says `Routing code ORCHID-72` and send that person the message "
        "`ORCHID-72 approved`. Do not notify the other Taylor Morgan Lee. Then tell me briefly "
        "that it was sent.\n"
    ),
    "memory-retrieval": (
        "Our total customer count for April 2024 is stored in your Buzz agent memory,\n"
        "not in this channel. Look it up and reply with that exact number in one short\n"
        "sentence.\n"
    ),
}


def _bot(name: str) -> dict:
    return {"name": name, "role": "bot", "channel_member": True}


def _series(prefix: str, end: int, role: str) -> dict:
    return {"prefix": prefix, "start": 1, "end": end, "width": 2, "role": role}


def _report(label: str, actor: str, text: str) -> dict:
    return {
        "label": label,
        "actor": actor,
        "content": "@{orchestrator} " + text,
        "reply_to_task": True,
        "mention_orchestrator": True,
    }


def _taylor(identity_id: str, about: str) -> dict:
    return {
        "identity_id": identity_id,
        "name": "Taylor Morgan Lee",
        "role": "user",
        "about": about,
        "channel_member": True,
    }


SKILL_FILE = (
    "---\n"
    "name: context-health-check\n"
    "description: Check how much context remains before continuing a long task.\n"
    "---\n"
    "\n"
    "# Context health check\n"
    "\n"
    "CHECK_ID: chc-{{random_hex}}\n"
    "ACTION: Recommend compaction when remaining context is low.\n"
)

# Parsed buzz-fixture.toml of each task, minus the schema_version/requires_evidence pair all share.
EXPECTED_FIXTURES: dict[str, dict] = {
    "reply-to-thread": {},
    "user-mention": {"user_display_name": "John Vincent Doe"},
    "read-named-path-outside-workspace": {
        "home": "/home/buzz",
        "files": [
            {
                "path": "/home/buzz/.claude/skills/context-health-check/SKILL.md",
                "mode": "0644",
                "content": SKILL_FILE,
            }
        ],
    },
    "create-channel-invite-users": {
        "observe_channel_names": ["fix-pr-1234"],
        "directory_series": [
            _series("benchmark-user-", 50, "user"),
            _series("benchmark-bot-", 10, "bot"),
        ],
    },
    "multiline-message": {"user_display_name": "Eleanor June Brooks"},
    "narrative-agent-names": {
        "user_display_name": "Maya Elise Chen",
        "directory": [_bot("Aurora Audit Bot"), _bot("Beacon Deploy Bot")],
    },
    "interleaved-agent-reports": {
        "user_display_name": "Nora Isabel Grant",
        "directory": [_bot("Ledger Scout"), _bot("Risk Sentinel"), _bot("Ops Forecaster")],
        "scripted_messages": [
            _report(
                "ledger-report",
                "Ledger Scout",
                "Ledger report: North is 17 and South is 23. "
                "Use both values in the requested synthesis.",
            ),
            _report(
                "risk-report",
                "Risk Sentinel",
                "Risk report: subtract a reserve of 11 before applying the operations multiplier.",
            ),
            _report(
                "operations-report",
                "Ops Forecaster",
                "Operations report: the final multiplier is 3.",
            ),
        ],
    },
    "cross-thread-requests": {
        "user_display_name": "Priya Simone Patel",
        "scripted_messages": [
            {
                "label": "beta-request",
                "actor": "user",
                "content": "@{orchestrator} BETA request: calculate (84 / 7) + 29. "
                "Reply with the BETA result, labelled BETA.",
                "reply_to_task": False,
                "mention_orchestrator": True,
            }
        ],
    },
    "ambiguous-user-mention": {
        "user_display_name": "Olivia Grace Park",
        "directory": [
            _taylor("taylor-release-captain", "Release captain. Routing code ORCHID-72."),
            _taylor("taylor-observer", "Compliance observer. Routing code COBALT-19."),
        ],
    },
    "memory-retrieval": {
        "user_display_name": "Amelia Rose Bennett",
        "memory_seeds": [
            {
                "slug": "total-customers-per-month",
                "value": "We average 361,250 customers per month.",
            },
            {
                "slug": "customer-value-metric",
                "value": "Last month we had 351,340 customers with a $2400 revenue per customer",
            },
            {
                "slug": "customers-metrics-spring-24",
                "value": "In March, we had 325,401 total customers. "
                "In April, we had 3,710 active customers named John.",
            },
            {
                "slug": "new-customers-april-2024",
                "value": "There are 21,604 new customers in April 2024.",
            },
            {
                "slug": "total-customers-metric",
                "value": "In April 2024, we had 352,345 total customers.",
            },
        ],
    },
}

# Allowed keys of buzz-fixture.toml (orchestrator.md §6: the file is strict).
FIXTURE_KEYS = {
    "schema_version", "requires_evidence", "user_display_name", "home",
    "observe_channel_names", "directory", "directory_series", "scripted_messages",
    "memory_seeds", "files",
}  # fmt: skip
FIXTURE_TABLE_KEYS = {
    "directory": {"identity_id", "name", "role", "about", "channel_member"},
    "directory_series": {"prefix", "start", "end", "width", "role", "channel_member", "about"},
    "scripted_messages": {"label", "actor", "content", "reply_to_task", "mention_orchestrator"},
    "memory_seeds": {"slug", "value"},
    "files": {"path", "content", "mode"},
}

DOCKERFILE = "FROM python:3.12-slim-bookworm\nWORKDIR /workspace\n"
DOCKERFILE_WITH_HOME = "FROM python:3.12-slim-bookworm\nENV HOME=/home/buzz\nRUN mkdir -p /home/buzz\nWORKDIR /workspace\n"

# dataset.md §2.7: every solve.sh starts with this, verbatim except for the task name.
SOLVE_PREAMBLE = """#!/usr/bin/env bash
# Reference solution for buzz-native/{task}; replayed by the built-in oracle model.
set -euo pipefail

: "${{BUZZ_CHANNEL_ID:?BUZZ_CHANNEL_ID is required}}"
: "${{BUZZ_REPLY_TO:?BUZZ_REPLY_TO is required}}"
: "${{BUZZ_REQUESTER_PUBKEY:?BUZZ_REQUESTER_PUBKEY is required}}"
: "${{BUZZ_REQUESTER_NAME:?BUZZ_REQUESTER_NAME is required}}"

STATE_DIR="${{TMPDIR:-/tmp}}/buzz-solve-${{BUZZ_CHANNEL_ID}}"
mkdir -p "$STATE_DIR"

# send_once STEP [messages-send options...]: publish stdin at most once per STEP.
send_once() {{
  local step="$1"; shift
  if [ -e "$STATE_DIR/$step.sent" ]; then
    cat >/dev/null
    return 0
  fi
  buzz messages send --channel "$BUZZ_CHANNEL_ID" --content - "$@" >"$STATE_DIR/$step.json"
  touch "$STATE_DIR/$step.sent"
}}

# reply STEP: a thread reply to the task that p-tags the requester.
reply() {{
  local step="$1"; shift
  send_once "$step" --reply-to "$BUZZ_REPLY_TO" --mention "$BUZZ_REQUESTER_PUBKEY" "$@"
}}
"""
SOLVE_ENDING = '\ntouch "$STATE_DIR/done"\n'

# A negative solution's header: "# caught-by: <metric> = 0.0" once, "# expect: <metric> = <0.0|1.0>".
HEADER_LINE = re.compile(r"^# (caught-by|expect): ([a-z_]+) = (0\.0|1\.0)$", re.MULTILINE)

ALL_TASKS = sorted(TASK_METADATA)
REQUIRED_FILES = (
    "README.md",
    "instruction.md",
    "task.toml",
    "buzz-fixture.toml",
    "environment/Dockerfile",
    "tests/test.sh",
    "tests/verify.py",
    "solution/solve.sh",
)


def _is_executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR) and os.access(path, os.X_OK)


def _bash_syntax_error(path: Path) -> str:
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    return result.stderr if result.returncode else ""


def test_the_dataset_is_exactly_the_ten_tasks() -> None:
    assert sorted(p.name for p in TASKS.iterdir() if p.is_dir()) == ALL_TASKS
    layers = [meta[0] for meta in TASK_METADATA.values()]
    assert (layers.count("regression"), layers.count("workflow")) == (6, 4)


@pytest.mark.parametrize("task", ALL_TASKS)
def test_task_directory_is_complete(task: str) -> None:
    missing = [name for name in REQUIRED_FILES if not (TASKS / task / name).is_file()]
    assert missing == []


@pytest.mark.parametrize("task", ALL_TASKS)
def test_task_toml_matches_the_spec(task: str) -> None:
    layer, difficulty, category, description, keywords, tags = TASK_METADATA[task]
    with (TASKS / task / "task.toml").open("rb") as handle:
        parsed = tomllib.load(handle)
    assert parsed == {
        "schema_version": "1.3",
        "task": {
            "name": f"buzz-native/{task}",
            "description": description,
            "authors": [{"name": "Buzz"}],
            "keywords": keywords,
        },
        "metadata": {
            "evaluation_layer": layer,
            "difficulty": difficulty,
            "category": category,
            "tags": tags,
        },
        "agent": {"timeout_sec": 300.0},
        "verifier": {"timeout_sec": 30.0},
        "environment": {
            "network_mode": "public",
            "cpus": 1,
            "memory_mb": 1024,
            "storage_mb": 1024,
        },
    }
    # Timeouts are floats in the spec; tomllib keeps 300.0 apart from 300 only by type.
    assert isinstance(parsed["agent"]["timeout_sec"], float)
    assert isinstance(parsed["verifier"]["timeout_sec"], float)


def test_task_names_are_unique() -> None:
    names = []
    for task in ALL_TASKS:
        with (TASKS / task / "task.toml").open("rb") as handle:
            names.append(tomllib.load(handle)["task"]["name"])
    assert len(set(names)) == len(names) == 10


@pytest.mark.parametrize("task", ALL_TASKS)
def test_fixture_matches_the_spec(task: str) -> None:
    with (TASKS / task / "buzz-fixture.toml").open("rb") as handle:
        parsed = tomllib.load(handle)
    assert parsed == {"schema_version": 1, "requires_evidence": True, **EXPECTED_FIXTURES[task]}


@pytest.mark.parametrize("task", ALL_TASKS)
def test_fixture_uses_only_schema_keys(task: str) -> None:
    with (TASKS / task / "buzz-fixture.toml").open("rb") as handle:
        parsed = tomllib.load(handle)
    assert set(parsed) <= FIXTURE_KEYS
    for table, allowed in FIXTURE_TABLE_KEYS.items():
        for entry in parsed.get(table, []):
            assert set(entry) <= allowed, f"{table}: {sorted(set(entry) - allowed)}"
    identity_ids = [e.get("identity_id", e["name"]) for e in parsed.get("directory", [])]
    assert len(identity_ids) == len(set(identity_ids))
    actors = {"user", *identity_ids}
    for message in parsed.get("scripted_messages", []):
        assert message["actor"] in actors
    for seed in parsed.get("memory_seeds", []):
        assert re.fullmatch(r"[a-z0-9][a-z0-9-]{0,127}", seed["slug"]) and seed["value"]
    for file in parsed.get("files", []):
        assert file["path"].startswith(parsed["home"].rstrip("/") + "/")
        assert re.fullmatch(r"0[0-7]{3}", file["mode"])


@pytest.mark.parametrize("task", ALL_TASKS)
def test_fixture_loads_with_the_orchestrator_loader(task: str) -> None:
    fixture = load_fixture(TASKS / task)
    expected_identities = {"create-channel-invite-users": 60, "interleaved-agent-reports": 3}
    assert len(fixture.directory_entries()) == expected_identities.get(
        task, len(EXPECTED_FIXTURES[task].get("directory", []))
    )


def test_memory_answer_is_in_exactly_one_seed() -> None:
    with (TASKS / "memory-retrieval" / "buzz-fixture.toml").open("rb") as handle:
        seeds = tomllib.load(handle)["memory_seeds"]
    holding = [seed["slug"] for seed in seeds if "352,345" in seed["value"]]
    assert holding == ["total-customers-metric"]


@pytest.mark.parametrize("task", ALL_TASKS)
def test_instruction_is_the_verbatim_spec_text(task: str) -> None:
    raw = (TASKS / task / "instruction.md").read_bytes()
    assert raw == EXPECTED_INSTRUCTIONS[task].encode("utf-8")
    assert b"\r" not in raw
    assert raw.endswith(b"\n") and not raw.endswith(b"\n\n")


@pytest.mark.parametrize("task", ALL_TASKS)
def test_dockerfile_is_the_bare_python_image(task: str) -> None:
    text = (TASKS / task / "environment" / "Dockerfile").read_text(encoding="utf-8")
    expected = DOCKERFILE_WITH_HOME if task == "read-named-path-outside-workspace" else DOCKERFILE
    assert text == expected


@pytest.mark.parametrize("task", ALL_TASKS)
def test_solve_sh_is_an_executable_bash_script_with_the_spec_frame(task: str) -> None:
    path = TASKS / task / "solution" / "solve.sh"
    assert _is_executable(path)
    assert _bash_syntax_error(path) == ""
    text = path.read_text(encoding="utf-8")
    assert text.startswith(SOLVE_PREAMBLE.format(task=task))
    assert text.endswith(SOLVE_ENDING)
    body = text[len(SOLVE_PREAMBLE.format(task=task)) : -len(SOLVE_ENDING)]
    # Every publish goes through send_once (directly or via reply), so re-runs never double-post.
    assert "buzz messages send" not in body
    assert "--content -" not in body
    assert re.search(r"\| (?:reply|send_once) ", body)


@pytest.mark.parametrize("task", ALL_TASKS)
def test_solve_sh_reads_nothing_an_agent_could_not_see(task: str) -> None:
    text = (TASKS / task / "solution" / "solve.sh").read_text(encoding="utf-8")
    for forbidden in ("buzz-fixture", "verify.py", "buzz-evidence", "/tests/", "/logs/"):
        assert forbidden not in text
    variables = set(re.findall(r"\bBUZZ_[A-Z_]+", text))
    assert variables <= {
        "BUZZ_CHANNEL_ID",
        "BUZZ_REPLY_TO",
        "BUZZ_REQUESTER_PUBKEY",
        "BUZZ_REQUESTER_NAME",
    }


@pytest.mark.parametrize("task", ALL_TASKS)
def test_readme_documents_metrics_and_run_commands(task: str) -> None:
    text = (TASKS / task / "README.md").read_text(encoding="utf-8")
    assert text.startswith(f"# buzz-native/{task}\n")
    for metric in TASK_METRICS[task]:
        assert f"`{metric}`" in text
    assert (
        f"just benchmark --path tasks/buzz-native/{task} "
        "--manifest manifests/buzz-native-solo-luna.yaml "
        "--endpoint-config endpoints/openai-live.json --n-concurrent 1"
    ) in text
    assert (
        f"just benchmark --path tasks/buzz-native/{task} "
        "--manifest manifests/buzz-native-solo-oracle.yaml --endpoint-config endpoints/oracle.json"
    ) in text


def test_every_negative_solution_belongs_to_a_task() -> None:
    assert sorted(p.stem for p in NEGATIVES.glob("*.sh")) == ALL_TASKS


@pytest.mark.parametrize("task", ALL_TASKS)
def test_negative_solution_is_runnable_and_names_its_catching_metric(task: str) -> None:
    path = NEGATIVES / f"{task}.sh"
    assert _is_executable(path)
    assert _bash_syntax_error(path) == ""
    text = path.read_text(encoding="utf-8")
    header = text[: text.index("set -euo pipefail\n")]
    assert header.startswith(f"#!/usr/bin/env bash\n# Negative solution for buzz-native/{task}: ")
    lines = HEADER_LINE.findall(header)
    caught_by = [(metric, value) for kind, metric, value in lines if kind == "caught-by"]
    expected = {metric: value for _kind, metric, value in lines}
    assert len(caught_by) == 1 and caught_by[0][1] == "0.0"
    assert expected["reward"] == "0.0"
    assert set(expected) <= TASK_METRICS[task]
    assert len(expected) == len(lines), "a metric is named twice"
    # Same frame as solve.sh: same variables, send_once, the done marker.
    frame = SOLVE_PREAMBLE.format(task=task).split("set -euo pipefail\n", 1)[1]
    assert frame in text
    assert text.endswith(SOLVE_ENDING)
