"""The expectation headers of the test fixtures' solution scripts (negative and tamper
solutions): `# caught-by: <metric> = 0.0` (exactly one) and `# expect: <metric> = <0.0|1.0>`
lines, `# expect: reward = 0.0` among them."""

import re
from dataclasses import dataclass
from pathlib import Path

HEADER_LINE = re.compile(r"^# (?P<kind>caught-by|expect): (?P<metric>\w+) = (?P<value>[01]\.0)$")


@dataclass(frozen=True)
class Expectation:
    caught_by: str
    expected: dict[str, float]

    def problems(self, rewards: dict[str, float] | None) -> dict[str, object]:
        """Metrics whose value differs from the expected one (empty when the rewards hold)."""
        found = rewards or {}
        return {
            metric: {"expected": value, "got": found.get(metric)}
            for metric, value in self.expected.items()
            if found.get(metric) != value
        }


def read_expectation(script: Path) -> Expectation:
    caught_by: list[str] = []
    expected: dict[str, float] = {}
    for line in script.read_text(encoding="utf-8").splitlines():
        if match := HEADER_LINE.match(line):
            expected[match["metric"]] = float(match["value"])
            if match["kind"] == "caught-by":
                assert match["value"] == "0.0", f"{script}: caught-by must name a 0.0 metric"
                caught_by.append(match["metric"])
    assert len(caught_by) == 1, f"{script}: needs exactly one '# caught-by: <metric> = 0.0' line"
    assert expected.get("reward") == 0.0, f"{script}: needs '# expect: reward = 0.0'"
    return Expectation(caught_by[0], expected)
