"""The package's layers, held by its import graph (docs/contributing.md: "Layers").

Every `orchestra` module's imports are read with `ast` (function-level and `TYPE_CHECKING`
imports too, since they are dependencies all the same). A folder may import its own modules,
the package-level modules and folders of lower layers; an import of a higher layer, or of a
peer in the same layer, is a back-edge and fails the test naming both modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from orchestra.paths import PROJECT_ROOT

PACKAGE = "orchestra"
#: What `orchestra/<name>.py` modules (and the package itself) count as: one layer below all.
PACKAGE_LEVEL = "(package)"

#: Lowest first. Folders in one tuple are peers: neither may import the other.
LAYERS: tuple[tuple[str, ...], ...] = (
    (PACKAGE_LEVEL,),  # paths, jsonio, files and the other shared helpers
    ("nostr",),  # pure protocol: keys, events, filters, bech32, NIP-44
    ("relay", "buzz"),  # the relay; the client library and CLI
    ("agents",),  # buzz-acp, buzz-agent, buzz-dev-mcp, the oracle
    ("config",),  # manifests, endpoint configs, tasks and fixtures
    ("documents",),  # the jobs directory's typed documents
    ("stack",),  # relay and database for a run
    ("evidence", "verify"),  # exporting the transcript; running the verifier
    ("trial",),  # one trial, step by step
    ("jobs",),  # a job: plan, resume, scheduling, its result and aggregation
    ("executors",),  # trials on a Ray cluster (the only place that imports ray)
    ("results",),  # the results database and the trend over runs (report draws the trend)
    ("report",),  # summary table, report.json, junit.xml, report.html, compare
    ("export",),  # runs and jobs in Harbor's jobs-directory format
    ("run",),  # one benchmark or resume run: preflight, stack, jobs, signals (below the CLI)
    ("taskkit",),  # writing and checking tasks: verifier cases, replays, the scaffold
    ("cli",),  # the `orchestra` command
)


def layer_order(layers: Sequence[Sequence[str]]) -> str:
    """The order as docs/contributing.md writes it, e.g. `nostr → relay | buzz → agents`."""
    return " → ".join(" | ".join(folders) for folders in layers)


# --- reading the graph -----------------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, *, is_package: bool, known: set[str]) -> set[str]:
    """The `orchestra` modules `source` imports anywhere (top level, functions, branches)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            for alias in node.names:
                # `from orchestra import jobs` imports the module orchestra.jobs
                candidate = f"{origin}.{alias.name}"
                found.add(candidate if candidate in known else origin)
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")}


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the `orchestra` modules it imports, for every module under `root`."""
    files = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    known = set(files)
    return {
        module: imported_modules(
            path.read_text(encoding="utf-8"),
            module,
            is_package=path.name == "__init__.py",
            known=known,
        )
        for module, path in files.items()
    }


# --- checking it -----------------------------------------------------------------------------


def folder_of(module: str, folders: Iterable[str]) -> str | None:
    """`orchestra.relay.storage.rows` → `relay`; package-level modules → PACKAGE_LEVEL;
    None for a folder that no layer names."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in folders:
        return parts[1]
    return PACKAGE_LEVEL if len(parts) <= 2 else None


def back_edges(
    graph: Mapping[str, Iterable[str]],
    layers: Sequence[Sequence[str]],
    *,
    folders: Iterable[str] | None = None,
) -> list[str]:
    """Every import that points up or sideways, as `importer → imported (why)`.

    `folders` are the subpackages of the package (default: every folder the layers name);
    a module of a subpackage that no layer names is reported too.
    """
    rank = {folder: index for index, group in enumerate(layers) for folder in group}
    known = set(folders) if folders is not None else set(rank) - {PACKAGE_LEVEL}
    problems = []
    for importer, imported in sorted(graph.items()):
        source = folder_of(importer, known)
        if source is None or source not in rank:
            problems.append(f"{importer}: its folder is in no layer (add it to LAYERS)")
            continue
        for target_module in sorted(set(imported)):
            target = folder_of(target_module, known)
            if target is None or target not in rank or target == source:
                continue
            if rank[target] > rank[source]:
                problems.append(f"{importer} → {target_module} ({target} is above {source})")
            elif rank[target] == rank[source] and source != PACKAGE_LEVEL:
                problems.append(f"{importer} → {target_module} ({target} is a peer of {source})")
    return problems


def subpackages(root: Path) -> set[str]:
    return {path.parent.name for path in root.glob("*/__init__.py")}


# --- the package -----------------------------------------------------------------------------

ROOT = PROJECT_ROOT / PACKAGE


def test_the_package_has_no_back_edges() -> None:
    assert back_edges(import_graph(ROOT), LAYERS, folders=subpackages(ROOT)) == []


def test_every_folder_has_a_layer() -> None:
    named = {folder for group in LAYERS for folder in group}
    assert subpackages(ROOT) <= named, sorted(subpackages(ROOT) - named)
    assert named - {PACKAGE_LEVEL} <= subpackages(ROOT), sorted(named - subpackages(ROOT))


def test_the_contributing_guide_states_the_order() -> None:
    guide = (PROJECT_ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    assert layer_order(LAYERS[1:]) in guide


# --- the checker on synthetic graphs ---------------------------------------------------------

TOY_LAYERS = ((PACKAGE_LEVEL,), ("low",), ("left", "right"), ("high",))


@pytest.mark.parametrize(
    ("importer", "imported", "problem"),
    [
        ("orchestra.low.a", "orchestra.high.b", "orchestra.low.a → orchestra.high.b (high is above low)"),
        ("orchestra.left.a", "orchestra.right.b", "orchestra.left.a → orchestra.right.b (right is a peer of left)"),
        ("orchestra.paths", "orchestra.low", "orchestra.paths → orchestra.low (low is above (package))"),
        ("orchestra.misc.a", "orchestra.low.b", "orchestra.misc.a: its folder is in no layer (add it to LAYERS)"),
    ],
)  # fmt: skip
def test_an_edge_up_or_sideways_is_reported(importer: str, imported: str, problem: str) -> None:
    folders = {"low", "left", "right", "high", "misc"}
    assert back_edges({importer: [imported]}, TOY_LAYERS, folders=folders) == [problem]


def test_edges_down_and_inside_a_folder_pass() -> None:
    graph = {
        "orchestra.high.a": ["orchestra.left.b", "orchestra.low", "orchestra.paths", "orchestra"],
        "orchestra.left.b": ["orchestra.left.c", "orchestra.low.d"],
        "orchestra.low.d": ["orchestra.jsonio"],
        "orchestra.jsonio": ["orchestra.paths"],
    }
    assert back_edges(graph, TOY_LAYERS) == []


def test_imports_are_found_wherever_they_are_written(tmp_path: Path) -> None:
    root = tmp_path / PACKAGE
    (root / "low").mkdir(parents=True)
    (root / "high").mkdir()
    for init in (root, root / "low", root / "high"):
        (init / "__init__.py").write_text("")
    (root / "high" / "b.py").write_text("")
    (root / "low" / "sibling.py").write_text("")
    (root / "low" / "a.py").write_text(
        "import typing\n"
        "from . import sibling\n"
        "if typing.TYPE_CHECKING:\n"
        "    from orchestra.high import b\n"
        "def late():\n"
        "    import orchestra.high.b\n"
        "    from ..high.b import thing\n"
    )
    graph = import_graph(root)
    assert graph["orchestra.low.a"] == {"orchestra.low.sibling", "orchestra.high.b"}
    problems = back_edges(graph, TOY_LAYERS, folders=subpackages(root))
    assert problems == ["orchestra.low.a → orchestra.high.b (high is above low)"]
