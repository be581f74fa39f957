"""Issue 16, item 2: a hot range is hot on disk too, and the results say so.

Field benchmark 3 on a real MariaDB at test size: a 16 MiB buffer pool with
the settings the operator gives such a target (specs.databases.sizing), a flat45
table several times larger, clustered by its md5 keys. Before each read phase
the server restarts with an empty pool, as `cache: cold` restarts a database
pod. The hot-range phase (hotspot 0.1: the
lowest tenth of the md5 order, contiguous in the clustered index) must read
far fewer pages from disk per operation than the whole-range phase, measured
by the server's own counter (Innodb_buffer_pool_reads) and recorded in the
summaries; two pods reading at once share the server, and their merged figure
counts the server's reads once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_operator.specs.databases.request import TopologyRequest
from dbbench_operator.specs.databases.sizing import engine_settings
from dbbench_runner.merge import merge
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import start_mariadb
from tests.support.runner_files import mariadb_target, step

pytestmark = pytest.mark.integration

RECORDS = 40_000
RECORD_SIZE = 1024
READS = 6000
POOL = 16 * 2**20
# What the operator runs a MariaDB target with when spec.targets[].settings sets
# innodb_buffer_pool_size: 16M (examples/field/3-cold-cache-small.yaml): among
# them no buffer pool dump reloaded at a restart, and few pages kept free.
COLD = [
    f"--{key}={value}"
    for key, value in engine_settings(
        TopologyRequest(
            run_name="cold", namespace="ns", target_name="maria", engine="mariadb",
            topology="standalone", credentials_secret="s",
            settings={"innodb_buffer_pool_size": "16M"},
        )
    ).items()
]  # fmt: skip


def run_pods(raw: dict[str, Any], pods: int, out: Path) -> dict[str, Any]:
    """The step's pods at once (as a Job runs them), then merged; the merged summary."""
    processes = []
    for index in range(pods):
        config = out / f"pod{index}.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(yaml.safe_dump({**raw, "pod": {"index": index, "count": pods}}))
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "dbbench_runner", "run", "--config", str(config),
             "--out", str(out / f"pod{index}")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ))  # fmt: skip
    try:
        outputs = [p.communicate(timeout=600)[0] for p in processes]
    finally:
        for process in processes:  # a failed or timed-out pod must not outlive the test
            if process.poll() is None:
                process.kill()
                process.wait()
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output
    return merge(out / "merged", [out / f"pod{i}" for i in range(pods)]).to_wire()


def test_the_hot_range_reads_fewer_pages_from_disk_per_operation(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    server = start_mariadb(tmp_path_factory.mktemp("mariadb-cold"), extra_args=COLD)
    try:
        target = mariadb_target(server, "cold")
        size = {"recordSize": RECORD_SIZE}
        load = {"type": "insert", "batchSize": 100, "reportEvery": RECORDS}
        assert run_step(step(target, "flat45", RECORDS, load, table=size), tmp_path / "load") == 0
        table_bytes = (server.datadir / "cold" / "flat45.ibd").stat().st_size
        assert table_bytes > 3 * POOL, "the table must be several times the pool"

        server.restart()  # cold: an empty buffer pool
        hot = step(
            target, "flat45", RECORDS,
            {"type": "pointReads", "distribution": {"type": "hotspot", "dataFraction": 0.1},
             "operations": READS},
            table=size,
        ).model_dump(mode="json", by_alias=True, exclude_none=True)  # fmt: skip
        merged_hot = run_pods(hot, 2, tmp_path / "hot")

        server.restart()
        whole = step(
            target, "flat45", RECORDS,
            {"type": "pointReads", "keys": READS, "operations": READS}, table=size,
        )  # fmt: skip
        assert run_step(whole, tmp_path / "whole") == 0
        merged_whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    finally:
        server.stop()

    counters = merged_hot["serverCounters"]
    assert counters["diskReadsCounter"] == "Innodb_buffer_pool_reads"
    assert merged_hot["operations"] == READS
    hot_per_op = counters["diskReadsPerOperation"]
    whole_per_op = merged_whole["serverCounters"]["diskReadsPerOperation"]
    assert whole_per_op == merged_whole["serverCounters"]["diskReads"] / READS
    # The whole range misses the pool most of the time; the hot tenth fits it.
    assert whole_per_op > 0.5, whole_per_op
    assert hot_per_op < whole_per_op / 3, (hot_per_op, whole_per_op)

    # Two pods, one server: each pod's window saw the server's reads, the merge
    # counts them once, over the union of the windows.
    pods = [json.loads((tmp_path / "hot" / f"pod{i}" / "summary.json").read_text())
            for i in range(2)]  # fmt: skip
    blocks = [p["serverCounters"] for p in pods]
    assert all(b["diskReadsPerOperation"] is None for b in blocks)  # one pod: not the whole
    assert counters["diskReadsBefore"] == min(b["diskReadsBefore"] for b in blocks)
    assert counters["diskReadsAfter"] == max(b["diskReadsAfter"] for b in blocks)
    # Once: the server's reads between the first pod's start and the last pod's end,
    # at most the pods' own counts added up (less when their windows overlapped).
    assert counters["diskReads"] == counters["diskReadsAfter"] - counters["diskReadsBefore"]
    assert counters["diskReads"] <= sum(b["diskReads"] for b in blocks)
    assert counters["diskReadsPerOperation"] == counters["diskReads"] / READS
