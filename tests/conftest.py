"""Shared fixtures: real processes only (control plane, MariaDB, MySQL, PostgreSQL,
FerretDB, gated mongod).

`make test` runs the suite on several pytest-xdist workers (`--dist loadgroup`,
docs/testing.md). Each worker is its own process with its own session: the
servers behind session fixtures (a control plane, a MariaDB, a MySQL, a
PostgreSQL, a FerretDB) start at most once per worker that needs them, on
their own ports, data directories and tmpdirs. The test files sharing a fixture that is
expensive to build, or using a module-scoped one, are kept on one worker
(below), so that such a fixture is not built once per worker.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest
from _pytest.nodeid import NodeId

from dbbench_runner.calibration import SECONDS_VARIABLE

pytest_plugins = [
    "tests.fixtures.controlplane",
    "tests.fixtures.localcluster",
    "tests.fixtures.mariadb",
    "tests.fixtures.mysql",
    "tests.fixtures.postgres",
    "tests.fixtures.ferretdb",
    "tests.fixtures.mongod",
    "tests.fixtures.topology",
    "tests.fixtures.results_service",
    "tests.fixtures.result_sets",
    "tests.support.layout",  # tests/unit pure, tests/integration marked `integration`
    "tests.support.cpu_profile",  # --cpu-profile=FILE: what each test costs the machine
]

# The runner's no-op loop (runner-image/dbbench_runner/calibration.py) runs 0.3 s
# per step in a pod; the suite runs thousands of steps, in process and in the
# runner processes it starts (which inherit this), and needs the figure, not its
# precision: 0.05 s each (docs/testing.md, "How `make test` runs").
os.environ.setdefault(SECONDS_VARIABLE, "0.05")

# No system trust store: every TLS peer of the suite (the control plane, the
# results service, MySQL's self-signed certificates) is verified against the CA
# it names, or not verified, never against the public CAs; and parsing the
# bundle costs 26 ms of CPU per TLS context. mysql-connector-python (pure Python
# here: its C extension needs OpenSSL >= 3.2) builds two per connection to a
# MySQL server, 54 ms in all: test_contract_mysql.py took 37.6 s of CPU with
# the bundle and 20.0 s without (docs/testing.md). Set, not defaulted (machines
# set it to the system bundle), and inherited by every process the tests start
# (runners, the results service, the CLI, helm, kubectl).
os.environ["SSL_CERT_FILE"] = os.devnull

# Session fixtures that take long to build (result_sets: two MariaDB servers and
# two generated runs; the chart releases: helm installs on the control plane):
# every test using one goes to the same worker.
SHARED_GROUPS = {
    "result_sets": "result-sets",
    "scoped": "chart-releases",
    "clusterwide": "chart-releases",
}
PER_FILE_SCOPES = frozenset({"module", "class", "package"})


def _shared_group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    return next((group for name, group in SHARED_GROUPS.items() if name in names), None)


def _has_per_file_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    definitions = getattr(info, "name2fixturedefs", {})
    scopes = {getattr(d, "scope", "function") for defs in definitions.values() for d in defs}
    return bool(scopes & PER_FILE_SCOPES)


def xdist_group(path: str, items: list[pytest.Item]) -> str | None:
    """The worker group of a test file's tests: the group of a shared fixture any of
    them uses, else the file itself when a module- or class-scoped fixture would
    otherwise be built on several workers; None: its tests go wherever is free."""
    shared = [group for item in items if (group := _shared_group(item))]
    if shared:
        return shared[0]
    return path if any(_has_per_file_fixture(item) for item in items) else None


def _tag_for_loadgroup(item: pytest.Item, group: str) -> None:
    """What xdist's loadgroup does, on pytest 9.2 too: the group as a nodeid suffix.

    xdist 3.8.0 passes groups to its scheduler by appending ``@group`` to
    ``item._nodeid``; pytest 9.2 keeps node ids in ``item._id`` instead, so the
    suffix is lost and grouped tests are spread over workers (seen here: the
    result sets built on four workers). pytest-dev/pytest-xdist#1386, fix
    proposed in #1388. Harmless once xdist does it itself (the scheduler reads
    the text after the last ``@``).
    """
    if isinstance(getattr(item, "_id", None), NodeId):
        item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its own hook)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    by_file: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        by_file[item.nodeid.split("::", 1)[0]].append(item)
    on_loadgroup_worker = bool(getattr(config.option, "loadgroup", False))
    for path, file_items in by_file.items():
        group = xdist_group(path, file_items)
        if group is None:
            continue
        for item in file_items:
            item.add_marker(pytest.mark.xdist_group(group))
            if on_loadgroup_worker:
                _tag_for_loadgroup(item, group)
