"""The local node's MySQL image under a container memory limit.

MySQL 9.7 at its defaults holds about 520 MiB once it answers (performance
schema, a 64 MiB redo log buffer, the pool); in a 512Mi pod it stalled for
minutes at the limit or was OOM-killed. The entrypoint measures its temporary
server against the limit and stops, naming the limit and the fix, when the
server fills more than 95% of it just by starting. Run as the chart runs
it (tests/integration/images/test_mysql_image.py), inside a real memory cgroup that the
entrypoint reads where a container sees its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dbbench_contract.api import memory_floors as floors
from dbbench_local.mariadb import free_port
from tests.integration.images.image_support import Server, empty_volume, memory_cgroup, stop
from tests.integration.images.test_mysql_image import _SKIP, PASSWORD, _start, _wait_ready

pytestmark = [pytest.mark.integration, pytest.mark.skipif(_SKIP is not None, reason=_SKIP or "")]

MIB = 1024**2
ENV = {"MYSQL_ROOT_PASSWORD": PASSWORD}


def test_a_limit_the_server_fills_by_starting_is_refused_with_the_fix(tmp_path: Path) -> None:
    # 528Mi: the server starts (the check must get to run) and then holds
    # nearly all of it; a 512Mi pod stalled at this point.
    with memory_cgroup(528 * MIB) as cgroup:
        server = _start(empty_volume(tmp_path / "volume"), free_port(), ENV,
                        tmp_path / "server.log", cgroup)  # fmt: skip
        try:
            returncode = server.process.wait(timeout=180)
        finally:
            stop(server)
    output = server.output()
    assert returncode != 0, output
    assert "of the 528 MiB memory limit" in output, output
    assert "more than 95% of the container's 528 MiB memory limit" in output, output
    assert "hardware.resources.limits.memory" in output, output
    # Refused before the time zones and the accounts: no half-set-up server.
    assert "initialisation done" not in output, output


def test_a_limit_with_room_starts_and_says_how_much_it_uses(tmp_path: Path) -> None:
    with memory_cgroup(1024 * MIB) as cgroup:
        server: Server = _start(empty_volume(tmp_path / "volume"), free_port(), ENV,
                                tmp_path / "server.log", cgroup)  # fmt: skip
        try:
            _wait_ready(server)
        finally:
            stop(server)
    output = server.output()
    assert "of the 1024 MiB memory limit" in output, output
    assert "initialisation done" in output, output


def test_the_least_limit_admission_accepts_is_one_the_entrypoint_accepts(tmp_path: Path) -> None:
    """The admission floor (model/memory_floors.py) for these flags (a 64 MiB pool,
    performance_schema ON, 151 connections), to the MiB: the entrypoint's own check
    (95% of the limit at start) lets the server start there, so the two never
    disagree the other way round (admitted, then refused minutes later)."""
    fp = floors.FOOTPRINTS["mysql"]
    needed = floors.floor(fp, 64 * MIB, fp.default_connections, performance_schema=True)
    limit = -(-needed // MIB) * MIB
    with memory_cgroup(limit) as cgroup:
        server = _start(empty_volume(tmp_path / "volume"), free_port(), ENV,
                        tmp_path / "server.log", cgroup)  # fmt: skip
        try:
            _wait_ready(server)
        finally:
            stop(server)
    output = server.output()
    assert f"of the {limit // MIB} MiB memory limit" in output, output
    assert "initialisation done" in output, output
