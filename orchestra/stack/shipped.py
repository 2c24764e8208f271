"""The root files the stacks use (docker-compose.yml, testbed/): the checkout's where the package
runs from one, else the copies an installed wheel carries (a Ray node has no checkout)."""

from __future__ import annotations

from pathlib import Path

from orchestra.paths import INSTALLED_ASSETS, PROJECT_ROOT, RepoPaths


def shipped_files(checkout: Path = PROJECT_ROOT, installed: Path = INSTALLED_ASSETS) -> RepoPaths:
    in_checkout = RepoPaths(checkout)
    return in_checkout if in_checkout.docker_compose.is_file() else RepoPaths(installed)
