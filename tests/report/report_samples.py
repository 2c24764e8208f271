"""A representative job for the report tests: passes, a failure, a harness error, threads,
scripted events, directory bots and a hostile message."""

from jobs_builder import AGENT, USER, Msg, TrialSpec

PASS_REWARDS = {
    "reward": 1.0,
    "answer_correct": 1.0,
    "user_p_tagged": 1.0,
    "evidence_complete": 1.0,
}
HOSTILE = '<script>document.title="pwned";document.body.dataset.pwned="1"</script><b>bold?</b>'


def sample_trials() -> list[TrialSpec]:
    return [
        TrialSpec("user-mention", attempt=1, rewards=PASS_REWARDS, tokens=(1000, 0, 100),
                  cost_usd=0.25, seconds=12),
        TrialSpec(
            "user-mention",
            attempt=2,
            rewards={**PASS_REWARDS, "reward": 0.0, "user_p_tagged": 0.0},
            details={"user_display_name": USER, "parsed_numbers": [5328.0]},
            messages=[
                Msg(USER, "@solo-1 What is 12 x 37 x 12?", mentions=(AGENT,)),
                Msg(AGENT, f"@{USER} The answer is 5,328.", reply_to=0),
            ],
            tokens=(2000, 500, 200),
            cost_usd=0.5,
            seconds=20,
        ),
        TrialSpec(
            "reply-to-thread",
            attempt=1,
            rewards={"reward": 1.0, "reply_to_thread": 1.0},
            messages=[
                Msg(USER, "Compute the six-month figures."),
                Msg(AGENT, HOSTILE, reply_to=0, mentions=(USER,)),
            ],
            stop_reason="done_message",
        ),
        TrialSpec("reply-to-thread", attempt=2, status="error", stop_reason=None,
                  exception_type="AgentProcessExited", evidence=False),
        TrialSpec(
            "interleaved-agent-reports",
            layer="workflow",
            attempt=1,
            rewards={"reward": 1.0, "threaded": 1.0},
            directory=("Build Bot", "Deploy Bot"),
            messages=[
                Msg(USER, "@solo-1 Collect the bot reports in one thread.", mentions=(AGENT,)),
                Msg("Build Bot", "build finished", reply_to=0, scripted="build-report"),
                Msg(AGENT, "@Build Bot thanks, waiting for @Deploy Bot", reply_to=1,
                    mentions=("Build Bot", "Deploy Bot")),
                Msg("Deploy Bot", "deploy finished", scripted="deploy-report"),
                Msg(AGENT, f"@{USER} both reports are in.", reply_to=0, mentions=(USER,)),
            ],
        ),
        TrialSpec("interleaved-agent-reports", layer="workflow", attempt=2,
                  rewards={"reward": 0.0, "threaded": 0.0}),
    ]  # fmt: skip


LARGE_TASKS = (
    ("ambiguous-user-mention", "workflow"),
    ("create-channel-invite-users", "regression"),
    ("cross-thread-requests", "workflow"),
    ("interleaved-agent-reports", "workflow"),
    ("memory-retrieval", "regression"),
    ("multiline-message", "regression"),
    ("narrative-agent-names", "regression"),
    ("read-named-path-outside-workspace", "regression"),
    ("reply-to-thread", "regression"),
    ("user-mention", "workflow"),
)
#: A word only some transcripts hold, for the text search.
NEEDLE = "quokka"


def large_trials(attempts: int = 20) -> list[TrialSpec]:
    """10 tasks × `attempts` (200 by default): passes, failures on long metric names, errors and
    cancellations, long unbroken message text, and `NEEDLE` in every seventh transcript."""
    trials = []
    for number in range(attempts * len(LARGE_TASKS)):
        task, layer = LARGE_TASKS[number % len(LARGE_TASKS)]
        attempt = number // len(LARGE_TASKS) + 1
        metrics = {f"{task.replace('-', '_')}_dimension_{m}_held": 1.0 for m in range(4)}
        failing = f"{task.replace('-', '_')}_dimension_{number % 4}_held"
        passed = number % 3 != 0
        rewards = {"reward": 1.0 if passed else 0.0, **metrics}
        if not passed:
            rewards[failing] = 0.0
        word = NEEDLE if number % 7 == 0 else "wombat"
        messages = [
            Msg(USER, f"@solo-1 please handle {task} ({word})", mentions=(AGENT,)),
            Msg(AGENT, f"@{USER} done: " + "x" * 400, reply_to=0, mentions=(USER,)),
        ]
        spec = TrialSpec(task, attempt=attempt, layer=layer, rewards=rewards, messages=messages)
        if number % 25 == 5:
            spec = TrialSpec(task, attempt=attempt, layer=layer, status="error",
                             stop_reason=None, exception_type="AgentProcessExited",
                             messages=messages)  # fmt: skip
        elif number % 25 == 6:
            spec = TrialSpec(task, attempt=attempt, layer=layer, status="cancelled",
                             stop_reason=None, exception_type="Cancelled", evidence=False)  # fmt: skip
        trials.append(spec)
    return trials
