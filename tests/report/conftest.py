"""Session fixtures: two real result sets (runs `baseline` and `candidate`), each
with two MariaDB targets (durability safe vs fast) and insert + mix + query phases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from dbbench_local.mariadb import MariaDBServer, start_mariadb
from tests.report.generate import RunDir, generate_run, small_spec

# Settings the durability profiles put in force (docs/topologies.md).
PROFILES = {
    "safe": ["--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1"],
    "fast": ["--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0"],
}


@dataclass(frozen=True)
class ResultSets:
    root: Path  # the claim: <namespace>/<run>/<uid>/...
    baseline: RunDir  # 2 threads, 2 repeats, pricePerHour set
    # 2 threads in 2 processes (the client's make-up, not the workload: `dbbench
    # compare` lines its steps up with the baseline's), 2 repeats, no run price;
    # target fast has its own.
    candidate: RunDir


@pytest.fixture(scope="session")
def result_sets(tmp_path_factory: pytest.TempPathFactory) -> ResultSets:
    base = tmp_path_factory.mktemp("results")
    servers: dict[str, MariaDBServer] = {}
    try:
        for i, (name, args) in enumerate(PROFILES.items()):
            # Started inside the try: a server started before a later one fails is stopped.
            servers[name] = start_mariadb(base / f"mariadb-{name}", server_id=i + 1,
                                          extra_args=args)  # fmt: skip
        root = base / "claim"
        work = base / "work"
        baseline = generate_run(
            root, work, "baseline", "0b7e1c2a-0000-4000-8000-000000000001", servers,
            small_spec(threads=2, repeats=2, price=0.5),
        )  # fmt: skip
        candidate = generate_run(
            root, work, "candidate", "0b7e1c2a-0000-4000-8000-000000000002", servers,
            small_spec(threads=2, repeats=2, price=None, target_prices={"fast": 0.8},
                       processes=2),
        )  # fmt: skip
    finally:
        for server in servers.values():
            server.stop()
    return ResultSets(root, baseline, candidate)
