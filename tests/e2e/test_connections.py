"""200 runner connections on MariaDB and on MySQL, end to end on the node.

Each run has runner.pods 2 x threads 100 and sets no `settings`: the operator
sizes the server's max_connections from the run (2 x (100 + 1) runner
connections, its own session, 10 spare: 213; the servers' default 151 would
refuse the 152nd) and the buffer pool with it. A last `hold` phase (one
connection per pod, updates) keeps the servers up while the test reads, inside
the database pod, max_connections and the peak `Max_used_connections`: the
200 workers and 2 control connections were connected at once. The data set and
the phases are small and paced; MySQL and MariaDB get 1Gi (docs/local-cluster.md, "MySQL's
memory"). Runs are named with this session's token and removed at the end.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from dbbench_contract.api import parse_spec
from dbbench_contract.api.connections import mysql_connections_needed, runner_connections
from dbbench_contract.durations import parse_duration
from dbbench_local.install import Kube
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    database_pods,
    delete_run,
    results_json,
    run_status,
    run_uid,
    session_name,
    small_spec,
)
from tests.e2e.expectations import check_results

pytestmark = pytest.mark.e2e

ENGINES = ("mariadb", "mysql")
RUNNER = {"pods": 2, "threads": 100,
          "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                        "limits": {"cpu": "1", "memory": "512Mi"}}}  # fmt: skip
HARDWARE = {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                          "limits": {"cpu": "1", "memory": "1Gi"}},
            "storage": {"size": "1Gi"}}  # fmt: skip
PASSWORD = {"mariadb": "MARIADB_ROOT_PASSWORD", "mysql": "MYSQL_ROOT_PASSWORD"}


def spec(engine: str) -> dict[str, Any]:
    return small_spec(
        targets=[{"name": engine, "engine": engine}],
        hardware=HARDWARE,
        runner=RUNNER,
        dataset={"shape": "flat45", "records": 2000, "recordSize": 256},
        phases=[
            {"name": "load", "type": "insert", "batchSize": 50, "threads": 4},
            # Every one of the 2 x 100 connections reads for 20 s, paced (a read a
            # second each): what is checked is that they were all connected at
            # once; unpaced, 200 connections took both cores from every test
            # beside them (a load average of 75). The two pods start their phase
            # on their own: 20 s keeps their windows overlapping when one starts
            # seconds after the other on a busy node (with 10 s, on 2026-11-29,
            # Max_used_connections was 143 of 202).
            {"name": "connections", "type": "pointReads", "duration": "20s",
             "targetRate": 200},
            {"name": "hold", "type": "mix", "mix": {"update": 100}, "threads": 1,
             "duration": "60s", "targetRate": 20},
        ],
    )  # fmt: skip


SPECS = {engine: spec(engine) for engine in ENGINES}


def server_values(kube: Kube, engine: str, pod: str) -> dict[str, int]:
    """max_connections and Max_used_connections, read inside the pod over its socket
    (the chart names the container after the engine)."""
    sql = ("SHOW GLOBAL VARIABLES LIKE 'max_connections'; "
           "SHOW GLOBAL STATUS LIKE 'Max_used_connections'")  # fmt: skip
    client = "$(command -v mariadb || command -v mysql)"
    out = kube.kubectl(
        "exec", "-n", RUNS_NS, pod, "-c", engine, "--", "bash", "-c",
        f'{client} -uroot -p"${PASSWORD[engine]}" -N -B -e "{sql}" 2>/dev/null',
    ).stdout  # fmt: skip
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if line)}


@pytest.fixture(scope="module")
def finished(kube: Kube) -> Iterator[dict[str, Any]]:
    """Applies both runs, reads each server while its run's hold phase runs, and
    yields the final statuses and what was read; deletes the runs afterwards."""
    names = {engine: session_name(f"connections-{engine}") for engine in ENGINES}
    for engine in ENGINES:
        apply_run(kube, names[engine], SPECS[engine])
    uids = {engine: run_uid(kube, names[engine]) for engine in ENGINES}
    found: dict[str, Any] = {"names": names, "values": {}}
    # Exclusive runs (the default) run one after the other.
    deadline = time.monotonic() + sum(parse_duration(s["timeout"]) for s in SPECS.values()) + 120
    try:
        while "statuses" not in found:
            statuses = {engine: run_status(kube, names[engine]) for engine in ENGINES}
            for engine, status in statuses.items():
                progress = status.get("progress") or {}
                holding = progress.get("phase") == "hold" and progress.get("stage") == "Running"
                if holding and engine not in found["values"]:
                    (pod,) = database_pods(kube, names[engine], uids[engine])
                    found["values"][engine] = server_values(kube, engine, pod)
            if all(s.get("phase") in ("Succeeded", "Failed") for s in statuses.values()):
                found["statuses"] = statuses
            elif time.monotonic() > deadline:
                pytest.fail(f"the runs did not end in time: {statuses}")
            else:
                time.sleep(3)
        assert {e: run_uid(kube, names[e]) for e in ENGINES} == uids
        yield found
    finally:
        for name in names.values():
            delete_run(kube, name)


@pytest.mark.parametrize("engine", ENGINES)
def test_200_runner_connections_reach_the_server(
    kube: Kube, finished: dict[str, Any], engine: str
) -> None:
    body = SPECS[engine]
    status = finished["statuses"][engine]
    check_results(finished["names"][engine], body, status)
    parsed = parse_spec(body)
    needed = mysql_connections_needed(parsed, parsed.targets[0])
    assert needed > 200
    values = finished["values"].get(engine)
    assert values is not None, f"{engine}: the hold phase was never seen running"
    print(f"{engine}: needed {needed}, read in the pod {values}")  # shown with -rP
    # The operator's max_connections is in force, and the peak shows every runner
    # worker and control connection connected at once (past the default 151).
    assert values["max_connections"] == needed, values
    assert values["Max_used_connections"] >= runner_connections(parsed) == 2 * (100 + 1), values
    environment = results_json(kube, status, f"{engine}/connections/1/pod-0/environment.json")
    assert environment["server"]["settings"]["max_connections"] == str(needed)
