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
