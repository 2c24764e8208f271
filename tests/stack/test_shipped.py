"""The stacks' root files (docker-compose.yml, testbed/) come from the checkout, or, where the
package was installed from its wheel (a Ray node), from the copies the wheel carries."""

import zipfile
from pathlib import Path

from orchestra.paths import INSTALLED_ASSETS, PROJECT_ROOT, RepoPaths
from orchestra.stack.shipped import shipped_files
from orchestra.stack.wheelhouse import build_project_wheel


def test_a_checkout_uses_its_own_files() -> None:
    assert shipped_files() == RepoPaths(PROJECT_ROOT)
    assert shipped_files().benchmark_schema_sql.is_file()


def test_an_install_without_a_checkout_uses_the_installed_copies(tmp_path: Path) -> None:
    site_packages = tmp_path / "lib" / "python3.11" / "site-packages"  # no docker-compose.yml
    site_packages.mkdir(parents=True)
    assert shipped_files(site_packages, tmp_path / "share").root == tmp_path / "share"
    assert INSTALLED_ASSETS.parts[-2:] == ("share", "buzz-orchestra")


def test_the_wheel_carries_every_file_the_stacks_read(tmp_path: Path) -> None:
    wheel = build_project_wheel(tmp_path)
    data = f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.data/data/"
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name.removeprefix(data) for name in archive.namelist() if name.startswith(data)}
    expected = {"share/buzz-orchestra/docker-compose.yml"} | {
        f"share/buzz-orchestra/testbed/{path.name}" for path in (PROJECT_ROOT / "testbed").iterdir()
    }
    assert shipped == expected
    with zipfile.ZipFile(wheel) as archive:
        sql = archive.read(f"{data}share/buzz-orchestra/testbed/benchmark_schema.sql")
    assert sql == RepoPaths(PROJECT_ROOT).benchmark_schema_sql.read_bytes()
