"""Context trimming (agent-harness.md §2.9) and tool-result shaping (§2.10)."""

from __future__ import annotations

from orchestra.agents.agent.tools import elide_middle, model_tool_name, tool_kind
from orchestra.agents.agent.trimming import ContextMeter, trim_history
from orchestra.agents.llm.types import AssistantMessage, ToolCall, ToolResult, UserMessage

BIG = "x" * 40_000


def turn(n: int, result_text: str = BIG) -> list:
    call = ToolCall(f"c{n}", "s__shell", "{}")
    return [
        UserMessage(f"prompt {n}"),
        AssistantMessage(tool_calls=[call]),
        ToolResult(f"c{n}", result_text),
        AssistantMessage(text=f"answer {n}"),
    ]


def assert_pairs_intact(history: list) -> None:
    calls = {
        c.id for item in history if isinstance(item, AssistantMessage) for c in item.tool_calls
    }
    results = {item.call_id for item in history if isinstance(item, ToolResult)}
    assert calls == results


def test_below_threshold_nothing_changes() -> None:
    history = turn(1) + turn(2)
    meter = ContextMeter()
    trim_history(history, meter, threshold=1_000_000)
    assert history == turn(1) + turn(2)


def test_earlier_tool_results_are_cut_first() -> None:
    history = turn(1) + turn(2) + [UserMessage("current")]
    meter = ContextMeter()
    # Two 40 KB results are ~20k tokens; cutting the first one is enough for 12k.
    trim_history(history, meter, threshold=12_000)
    first, second = [i for i in history if isinstance(i, ToolResult)]
    assert len(first.text) < 2200 and "bytes elided" in first.text
    assert second.text == BIG  # not needed once below the threshold
    assert len(history) == 9


def test_whole_earlier_turns_are_dropped_oldest_first_keeping_the_current_prompt() -> None:
    history = turn(1) + turn(2) + turn(3, "y" * 4000) + [UserMessage("current")]
    meter = ContextMeter()
    trim_history(history, meter, threshold=600)
    prompts = [i.text for i in history if isinstance(i, UserMessage)]
    assert prompts[-1] == "current"
    assert "prompt 1" not in prompts
    assert_pairs_intact(history)


def test_current_turn_results_except_the_last_two_shrink() -> None:
    current = [UserMessage("current")]
    for n in range(4):
        current += [
            AssistantMessage(tool_calls=[ToolCall(f"k{n}", "s__shell", "{}")]),
            ToolResult(f"k{n}", BIG),
        ]
    meter = ContextMeter()
    trim_history(current, meter, threshold=21_000)
    sizes = [len(i.text) for i in current if isinstance(i, ToolResult)]
    assert sizes[0] < 1200 and sizes[1] < 1200 and sizes[2:] == [40_000, 40_000]
    assert_pairs_intact(current)


def test_estimate_uses_reported_tokens_plus_new_characters() -> None:
    history = [UserMessage("a" * 400)]
    meter = ContextMeter(fixed_chars=400)
    assert meter.estimate(history) == 200
    meter.record(5000, history)
    history.append(ToolResult("c", "b" * 800))
    assert meter.estimate(history) == 5200


def test_tool_naming_kinds_and_elision() -> None:
    assert model_tool_name("buzz-dev-mcp", "shell") == "buzz_dev_mcp__shell"
    assert model_tool_name("my.server v2", "x") == "my_server_v2__x"
    assert [tool_kind(n) for n in ("a__shell", "a__read_file", "a__str_replace", "a__todo")] == [
        "execute",
        "read",
        "edit",
        "other",
    ]
    text = "h" * 5000 + "t" * 5000
    cut = elide_middle(text, 1000)
    assert cut.startswith("h" * 500) and cut.endswith("t" * 500)
    assert "[… 9000 bytes elided …]" in cut
    assert elide_middle("short", 1000) == "short"
