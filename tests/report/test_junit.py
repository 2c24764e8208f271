"""junit.xml: valid against the JUnit schema and read the way CI consumers read it."""

import xml.etree.ElementTree as ET
from pathlib import Path

from jobs_builder import TrialSpec, build_job
from xsd_check import Schema

from orchestra.report.junit import junit_xml, write_junit_xml
from orchestra.report.report_json import build_report

SCHEMA = Schema(Path(__file__).with_name("junit.xsd"))


def test_schema_checker_rejects_what_the_schema_forbids() -> None:
    bad = ET.fromstring(
        '<testsuites><testsuite name="x" tests="one" failures="0" errors="0" skipped="0" time="1">'
        '<testcase name="a" time="1"><properties/><failure/></testcase></testsuite></testsuites>'
    )
    errors = SCHEMA.validate(bad)
    assert any("tests='one'" in e for e in errors)
    assert any("missing required attribute classname" in e for e in errors)
    assert any("unexpected element <properties>" in e for e in errors)


def test_junit_is_schema_valid_and_counts_match(sample_job: Path, tmp_path: Path) -> None:
    report = build_report([sample_job])
    path = tmp_path / "junit.xml"
    write_junit_xml(report, path)
    root = ET.parse(path).getroot()
    assert SCHEMA.validate(root) == []
    cases = root.findall("testsuite/testcase")
    # One testcase per trial; counters agree with the elements (what Jenkins recomputes).
    assert len(cases) == len(report.trials) == int(root.get("tests"))
    suite = root.find("testsuite")
    for kind, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        count = sum(1 for case in cases if case.find(kind) is not None)
        assert int(suite.get(attribute)) == count == int(root.get(attribute))
    assert int(root.get("failures")) == 2 and int(root.get("errors")) == 1


def test_a_real_junit_consumer_reads_every_result(sample_job: Path, tmp_path: Path) -> None:
    from junitparser import Error, Failure, JUnitXml, Skipped

    report = build_report([sample_job])
    path = tmp_path / "junit.xml"
    write_junit_xml(report, path)
    parsed = JUnitXml.fromfile(str(path))
    cases = [case for suite in parsed for case in suite]
    assert len(cases) == len(report.trials)
    outcomes = {type(result) for case in cases for result in case.result}
    assert {Failure, Error} <= outcomes
    failures = [case for case in cases if any(isinstance(r, Failure) for r in case.result)]
    errors = [case for case in cases if any(isinstance(r, Error) for r in case.result)]
    skipped = [case for case in cases if any(isinstance(r, Skipped) for r in case.result)]
    assert (len(failures), len(errors)) == (2, 1)
    assert parsed.failures == 2 and parsed.errors == 1 and parsed.skipped == len(skipped)
    assert all(case.classname.startswith("buzz-native/") for case in cases)


def test_failures_carry_metrics_and_details_errors_carry_the_exception(sample_job: Path) -> None:
    report = build_report([sample_job])
    root = ET.fromstring(junit_xml(report).encode())
    by_name = {case.get("name"): case for case in root.iter("testcase")}
    failed = next(c for n, c in by_name.items() if n.startswith("user-mention attempt 2"))
    assert failed.get("classname") == "buzz-native/user-mention"
    failure = failed.find("failure")
    assert failure.get("message") == "failing metrics: user_p_tagged"
    assert "user_p_tagged: 0.0  <- failed" in failure.text
    assert '"parsed_numbers": [' in failure.text and "5328.0" in failure.text
    errored = next(c for n, c in by_name.items() if n.startswith("reply-to-thread attempt 2"))
    error = errored.find("error")
    assert error.get("type") == "AgentProcessExited"
    assert error.get("message") == "AgentProcessExited: AgentProcessExited happened"
    assert error.text == "AgentProcessExited happened"  # the message, not a traceback
    passed = next(c for n, c in by_name.items() if n.startswith("user-mention attempt 1"))
    assert [child.tag for child in passed] == ["system-out"]
    assert "metrics: answer_correct=1.0" in passed.find("system-out").text
    assert float(passed.get("time")) == 12.0


def test_control_characters_in_tracebacks_stay_parseable(sample_job: Path) -> None:
    report = build_report([sample_job])
    error = next(t for t in report.trials if t.exception_info is not None)
    error.exception_info.exception_message = "bell\x07 nul\x00 ok"
    root = ET.fromstring(junit_xml(report).encode())
    assert SCHEMA.validate(root) == []
    assert "bell\ufffd nul\ufffd ok" in "".join(root.itertext())


def test_planned_trials_that_never_started_are_skipped_testcases(tmp_path: Path) -> None:
    job = build_job(
        tmp_path, "stopped", [TrialSpec("user-mention", rewards={"reward": 1.0})], attempts=3
    )
    report = build_report([job])
    assert [slot.model_dump() for slot in report.jobs[0].pending] == [
        {"task_name": "buzz-native/user-mention", "layer": "regression", "attempt": 2},
        {"task_name": "buzz-native/user-mention", "layer": "regression", "attempt": 3},
    ]
    root = ET.fromstring(junit_xml(report).encode())
    assert SCHEMA.validate(root) == []
    names = [case.get("name") for case in root.iter("testcase")]
    assert names[1:] == ["user-mention attempt 2 (not run)", "user-mention attempt 3 (not run)"]
    assert root.get("tests") == "3" and root.get("skipped") == "2"


def test_provider_errors_are_errors_and_only_bugs_show_a_traceback(tmp_path: Path) -> None:
    """A provider failure is an `<error>` (not a `<failure>`) that says so; the
    traceback is shown for `InternalError` alone."""
    job = build_job(
        tmp_path,
        "provider",
        [
            TrialSpec("user-mention", status="error", exception_type="ProviderUnavailable",
                      rewards={"reward": 0.0}),
            TrialSpec("reply-to-thread", status="error", exception_type="InternalError"),
        ],
    )  # fmt: skip
    report = build_report([job])
    causes = {t.short_name: t.error_cause for t in report.trials}
    assert causes == {"user-mention": "provider", "reply-to-thread": "internal"}
    root = ET.fromstring(junit_xml(report).encode())
    cases = {case.get("classname"): case for case in root.iter("testcase")}
    provider = cases["buzz-native/user-mention"]
    assert provider.find("failure") is None
    error = provider.find("error")
    assert error.get("type") == "ProviderUnavailable"
    assert error.text.startswith("ProviderUnavailable happened\n")
    assert "not the agent's score" in error.text and "Traceback" not in error.text
    assert cases["buzz-native/reply-to-thread"].find("error").text.startswith("Traceback")
