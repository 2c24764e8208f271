"""Every example query of docs/results-db.md, parsed out of the page and run against a database
of the three nightly runs (conftest), gives the rows the runs were built to give: the page
cannot drift from the schema."""

import re
import sqlite3

from orchestra.paths import PROJECT_ROOT

DOC = PROJECT_ROOT / "docs" / "results-db.md"
QUERY = re.compile(r"^### (?P<title>.+?)\n(?:(?!^### ).)*?```sql\n(?P<sql>.*?)```", re.S | re.M)

UM, RT, MM, MR = (
    f"buzz-native/{name}"
    for name in ("user-mention", "reply-to-thread", "multiline-message", "memory-retrieval")
)
EXPECTED = {
    "Pass rate per run": [
        ("nightly-1", "2026-12-01", 4, 4, 1.0),
        ("nightly-2", "2026-12-02", 5, 4, 0.8),
        ("nightly-3", "2026-12-03", 5, 2, 0.4),
    ],
    "Pass rate per task in the latest run": [
        (MR, 1, 1, 1.0),
        (MM, 0, 2, 0.0),
        (RT, 0, 1, 0.0),
        (UM, 1, 1, 1.0),
    ],
    "Since when has a task been flaky": [(MM, "2026-12-02T02:00:00.000000Z", 1)],
    "Tasks that flipped between pass and fail, and when": [(RT, "nightly-3", "pass", "fail")],
    # 0.06 (user-mention) + 0.06 (reply-to-thread) + 0.18 (multiline-message) + 0.10, 10 passes
    "Cost per passing trial by condition": [("buzz-native-solo-oracle", 0.4, 10, 0.04)],
    "Which metrics fail, per task": [
        (MM, "answer_correct", 3),
        (MM, "reward", 3),
        (RT, "answer_correct", 1),
        (RT, "reward", 1),
    ],
    "Errors by run and type": [("nightly-1", "AgentReadinessTimeout", "harness", 1)],
    "Tool calls per agent and tool": [("solo-1", "buzz_dev_mcp__shell", 2)],
}


def documented_queries() -> dict[str, str]:
    examples = DOC.read_text(encoding="utf-8").split("## Example queries", 1)[1]
    return {match["title"]: match["sql"] for match in QUERY.finditer(examples)}


def test_the_page_documents_five_to_eight_queries_and_each_is_checked() -> None:
    queries = documented_queries()
    assert 5 <= len(queries) <= 8
    assert set(queries) == set(EXPECTED)


def test_each_documented_query_gives_the_expected_rows(results_db: sqlite3.Connection) -> None:
    for title, sql in documented_queries().items():
        assert results_db.execute(sql).fetchall() == EXPECTED[title], title
