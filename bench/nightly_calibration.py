"""The nightly's calibration study (docs/statistics.md "The nightly decision: calibration"):
simulated nights through the functions `just nightly` runs (orchestra.report.stats.nightly_study),
printed as the markdown tables the docs hold.

    .venv/bin/python bench/nightly_calibration.py [--replicates N] [--seed S]

False alarms: a night with nothing changed exits 3 (every task at one pass rate, a 30-run
history, the recent nights' confirmation state carried). Detection: one task of 13 falls from
95 % to 50 % (the rest stay at 95 %); the share confirmed within 5 nights. Takes ~10 minutes on
2 cores at the default replicates.
"""

from __future__ import annotations

import argparse

from orchestra.report.stats.nightly_study import Design, detection, false_alarms

TASKS = (10, 20, 40)
RATES = (0.6, 0.8, 0.95)
ATTEMPTS = (1, 3, 5)
DETECTION_TASKS = 13


def false_alarm_table(replicates: int, seed: int) -> list[str]:
    lines = [
        "| tasks | k | pass rate | nights exiting 3 | expected per 30 nights | confirmation attempts per night |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for tasks in TASKS:
        for k in ATTEMPTS:
            for rate in RATES:
                found = false_alarms(Design(tasks, rate, k), replicates, seed)
                lines.append(
                    f"| {tasks} | {k} | {rate:.2f} | {found.rate:.1%} ({found.alarms}/{found.nights}) "
                    f"| {30 * found.rate:.2f} | {found.confirmation_attempts:.1f} |"
                )
    return lines


def detection_table(replicates: int, seed: int) -> list[str]:
    lines = [
        "| k | confirmed within 5 nights | another task confirmed first |",
        "|---:|---:|---:|",
    ]
    for k in ATTEMPTS:
        found = detection(Design(DETECTION_TASKS, 0.95, k), 0.95, 0.5, 5, replicates, seed)
        lines.append(
            f"| {k} | {found.rate:.1%} ({found.detected}/{found.replicates}) | {found.other_alarms} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=600)
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    print(f"False alarms ({args.replicates} unchanged nights per row, seed {args.seed}):\n")
    print("\n".join(false_alarm_table(args.replicates, args.seed)))
    print(
        f"\nDetection of a fall from 95 % to 50 % ({DETECTION_TASKS} tasks, 30-run history, "
        f"{args.replicates} replicates per row, seed {args.seed}):\n"
    )
    print("\n".join(detection_table(args.replicates, args.seed)))


if __name__ == "__main__":
    main()
