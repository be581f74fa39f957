"""The tests' layout as a rule (docs/testing.md, "Layout"): the directory says what
a test needs, so `make unit` can trust it.

- tests/unit/<package>/: pure code. No fixture that starts a server (below), no
  `integration` or `e2e` marker.
- tests/integration/<package>/: tests that start real servers (kube-apiserver,
  MariaDB, MySQL, PostgreSQL, FerretDB, the results service, ...). Every test
  there is marked `integration` here, so `-m "not integration and not e2e"`
  selects tests/unit/ exactly.
- tests/e2e/: the real node.

A test module anywhere else (say, one a merge brought back into an old folder),
or two test modules of one name (whatever their folders), stop the collection
with their names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

KINDS = ("unit", "integration", "e2e")
# The fixture modules whose fixtures start real processes; a fixture that
# requests one of theirs (chart releases, namespaces, result sets) counts too,
# as pytest lists the whole closure in `item.fixturenames`.
SERVER_FIXTURE_MODULES = frozenset({
    "tests.fixtures.controlplane",
    "tests.fixtures.localcluster",
    "tests.fixtures.mariadb",
    "tests.fixtures.mysql",
    "tests.fixtures.postgres",
    "tests.fixtures.ferretdb",
    "tests.fixtures.mongod",
    "tests.fixtures.results_service",
    "tests.fixtures.result_sets",
})  # fmt: skip


def kind_of(path: Path, root: Path) -> str | None:
    """unit, integration or e2e: the folder under tests/ a test file is in."""
    parts = path.relative_to(root).parts
    return parts[1] if len(parts) > 2 and parts[0] == "tests" and parts[1] in KINDS else None


def server_fixtures(item: pytest.Item) -> list[str]:
    info = getattr(item, "_fixtureinfo", None)
    definitions = getattr(info, "name2fixturedefs", {})
    return sorted(
        name for name in getattr(item, "fixturenames", ())
        if any(getattr(d.func, "__module__", "") in SERVER_FIXTURE_MODULES
               for d in definitions.get(name, ()))
    )  # fmt: skip


def problems(item: pytest.Item, root: Path) -> str | None:
    """What is wrong with where the test is, or None."""
    kind = kind_of(item.path, root)
    if kind is None:
        return "not under tests/unit/, tests/integration/ or tests/e2e/"
    if kind != "unit":
        return None
    marked = sorted({m.name for m in item.iter_markers()} & {"integration", "e2e"})
    if marked:
        return f"marked {', '.join(marked)}: move it to tests/integration/ or tests/e2e/"
    started = server_fixtures(item)
    if started:
        return f"starts servers ({', '.join(started)}): move it to tests/integration/"
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects (the mark plugin's own hook)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong: dict[str, str] = {}
    for item in items:
        found = problems(item, config.rootpath)
        if found:
            wrong.setdefault(item.nodeid.split("::", 1)[0], found)
        elif kind_of(item.path, config.rootpath) == "integration":
            item.add_marker(pytest.mark.integration)
    by_name: dict[str, set[str]] = {}
    for item in items:
        by_name.setdefault(item.path.name, set()).add(item.nodeid.split("::", 1)[0])
    for paths in by_name.values():
        for path in paths if len(paths) > 1 else ():
            others = ", ".join(sorted(paths - {path}))
            wrong.setdefault(path, f"one test module per name: {others} has the same name")
    if wrong:
        lines = "\n".join(f"  {path}: {why}" for path, why in sorted(wrong.items()))
        raise pytest.UsageError(f"tests out of place (tests/support/layout.py):\n{lines}")
