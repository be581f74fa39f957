"""A restart between steps is seen in the environment record (issue 30, item 4).

cache: cold and coldOnce restart a target's database pods before a step; the
runner records, per step, when the server it measured started (the server's
own Uptime, read at the step's start). On a real MariaDB restarted between two
read steps, as the operator restarts a pod: the steps before the restart
record one start, the step after it a start later than the previous step's
end. Without the restart the start stays put (driver_contract checks that on
every engine).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from dbbench_runner.running import run_step
from tests.fixtures.mariadb import start_mariadb
from tests.support.runner_files import mariadb_target, step

pytestmark = pytest.mark.integration

RECORDS = 500


def recorded(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(environment.json's server block, summary.json) of a step's files."""
    server = json.loads((out / "environment.json").read_text())["server"]
    return server, json.loads((out / "summary.json").read_text())


def test_a_restart_between_steps_moves_the_recorded_server_start(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    server = start_mariadb(tmp_path_factory.mktemp("mariadb-restarts"))
    reads = {"type": "pointReads", "operations": 200}
    try:
        target = mariadb_target(server, "restarts")
        load = {"type": "insert", "batchSize": 100}
        assert run_step(step(target, "flat45", RECORDS, load), tmp_path / "load") == 0
        assert run_step(step(target, "flat45", RECORDS, reads), tmp_path / "warm") == 0
        # The recorded start is the step's clock minus the server's Uptime in whole
        # seconds: up to 1 s before the real start. A restart within that second
        # of the warm step's end (steps take a fraction of a second) could read
        # as before it; after 1.5 s it cannot.
        time.sleep(1.5)
        server.restart()
        assert run_step(step(target, "flat45", RECORDS, reads), tmp_path / "cold") == 0
    finally:
        server.stop()
    (loaded, _), (warm, warm_summary), (cold, cold_summary) = (
        recorded(tmp_path / out) for out in ("load", "warm", "cold")
    )
    assert abs(warm["startedAt"] - loaded["startedAt"]) < 1.5  # whole seconds of Uptime
    # Restarted after the warm step ended, before the cold step began.
    assert warm_summary["endedAt"] < cold["startedAt"] < cold_summary["startedAt"]
    assert cold["uptimeSeconds"] < warm["uptimeSeconds"] + 60
