"""dataset.source on the real node: records from files on a PersistentVolumeClaim.

The test fills a local-path claim itself: the files it generates in the
vehicle-inspection data set's layout (tests/support/inspection_files.py: a
gzipped CSV of tests, and a plain CSV with one broken row) go into a
ConfigMap, and a busybox pod copies them onto the claim. Then:

- a run with a MySQL and a PostgreSQL target loads the gzipped CSV from two
  runner pods and reads every key once; each target's table holds exactly
  the file's rows (count, sum of Mileage and key range, queried inside the
  database pods while a last phase keeps them up) and no read missed;
- a run loading the broken file fails with the runner's reason
  (DataSourceInvalid), naming the file and the line, and records no result
  for the load.
"""

from __future__ import annotations

import base64
import csv
import gzip
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbbench_local.install import Kube, wait_for
from tests.e2e.conftest import (
    RUNS_NS,
    apply_run,
    condition,
    database_pods,
    delete_run,
    node_image,
    run_status,
    run_uid,
    session_name,
    small_spec,
    wait_phase,
)
from tests.support.inspection_files import SEED, mapping, write_csv

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3000)]

RECORDS = 1500
BROKEN_LINE = 1234
MYSQL_HARDWARE = {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"},
                                "limits": {"cpu": "1", "memory": "1Gi"}},
                  "storage": {"size": "1Gi"}}  # fmt: skip


def _files(tmp: Path) -> dict[str, bytes]:
    good = write_csv(tmp / "test_result_2021.csv.gz", RECORDS)
    broken = write_csv(tmp / "broken.csv", RECORDS)
    lines = broken.read_text().splitlines(keepends=True)
    values = lines[BROKEN_LINE - 1].split(",")
    values[6] = "12O45"  # a letter O in test_mileage
    lines[BROKEN_LINE - 1] = ",".join(values)
    broken.write_text("".join(lines))
    return {"test_result_2021.csv.gz": good.read_bytes(), "broken.csv": broken.read_bytes()}


@pytest.fixture(scope="module")
def claim(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local-path claim holding mot/test_result_2021.csv.gz and bad/broken.csv."""
    name = session_name("mot-files")
    files = _files(tmp_path_factory.mktemp("mot"))
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
         "binaryData": {k: base64.b64encode(v).decode() for k, v in files.items()}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local-path",
                  "resources": {"requests": {"storage": "64Mi"}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
         "spec": {"restartPolicy": "Never", "containers": [{
             "name": "copy", "image": node_image("busybox.tar"), "imagePullPolicy": "Never",
             "command": ["sh", "-c", "mkdir -p /claim/mot /claim/bad && "
                         "cp /files/test_result_2021.csv.gz /claim/mot/ && "
                         "cp /files/broken.csv /claim/bad/ && chmod -R a+rX /claim"],
             "volumeMounts": [{"name": "files", "mountPath": "/files"},
                              {"name": "claim", "mountPath": "/claim"}]}],
             "volumes": [{"name": "files", "configMap": {"name": name}},
                         {"name": "claim", "persistentVolumeClaim": {"claimName": name}}]}},
    ]  # fmt: skip
    manifest = "\n---\n".join(json.dumps(o) for o in objects)
    # create, not apply: apply would copy the files into an annotation (256 KiB at most).
    kube.kubectl("create", "-n", RUNS_NS, "-f", "-", stdin=manifest)

    def copied() -> bool:
        pod = kube.get("pod", name, "-n", RUNS_NS) or {}
        phase = (pod.get("status") or {}).get("phase")
        assert phase != "Failed", pod.get("status")
        return phase == "Succeeded"

    wait_for(copied, 300, "the files to be copied onto the claim")
    try:
        yield name
    finally:
        kube.kubectl("delete", "pod,pvc,configmap", name, "-n", RUNS_NS, "--ignore-not-found",
                     "--wait=true", timeout=180, check=False)  # fmt: skip


def source(claim: str, files: list[str]) -> dict[str, Any]:
    return {"claimName": claim, "files": files, "format": "csv", **mapping(empty=["Items"])}


CHART = {"mysql": "mysql", "pg": "postgresql"}
COUNT = "SELECT COUNT(*), SUM(Mileage), MIN(TestID), MAX(TestID) FROM vehicle_test"


def count_at_the_server(kube: Kube, run: str, uid: str, target: str) -> str:
    """COUNT(*)|SUM(Mileage)|MIN|MAX(TestID) of the tests table, run inside the
    target's database pod (over its socket, as the image's superuser)."""
    (pod,) = database_pods(kube, run, uid, CHART[target])
    if target == "mysql":
        out = kube.kubectl(
            "exec", "-n", RUNS_NS, pod, "-c", "mysql", "--", "bash", "-c",
            'mysql -uroot -p"$MYSQL_ROOT_PASSWORD" -N -B dbbench -e "$0" 2>/dev/null', COUNT,
        ).stdout  # fmt: skip
        return out.strip().replace("\t", "|")
    quoted = COUNT
    for name in ("Mileage", "TestID", "vehicle_test"):
        quoted = quoted.replace(name, f'"{name}"')
    return kube.kubectl(
        "exec", "-n", RUNS_NS, pod, "-c", "postgresql", "--", "bash", "-c",
        'psql -X -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d dbbench -At -F "|" -c "$0"', quoted,
    ).stdout.strip()  # fmt: skip


def expected_count(tmp: Path) -> str:
    """The same figures of the file, read here (not through the runner)."""
    data = gzip.decompress(_files(tmp)["test_result_2021.csv.gz"])
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    keys = [int(r["test_id"]) for r in rows]
    return f"{len(rows)}|{sum(int(r['test_mileage']) for r in rows)}|{min(keys)}|{max(keys)}"


def counted_while_held(kube: Kube, name: str) -> dict[str, str]:
    """Each target's figures, read while its `hold` phase keeps its database up
    (the run tears a target down after its phases); waits for the run to end."""
    uid, counted = run_uid(kube, name), dict[str, str]()
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        status = run_status(kube, name)
        progress = status.get("progress") or {}
        target = str(progress.get("target"))
        if (progress.get("phase") == "hold" and progress.get("stage") == "Running"
                and target in CHART and target not in counted):  # fmt: skip
            counted[target] = count_at_the_server(kube, name, uid, target)
        if status.get("phase") in ("Succeeded", "Failed"):
            assert status["phase"] == "Succeeded", status.get("message")
            return counted
        time.sleep(2)
    pytest.fail(f"run {name} did not end within 30 minutes")


def test_a_csv_on_a_claim_loads_exactly_on_mysql_and_postgresql(
    kube: Kube, claim: str, tmp_path: Path
) -> None:
    name = session_name("mot-load")
    spec = small_spec(
        targets=[{"name": "mysql", "engine": "mysql", "hardware": MYSQL_HARDWARE,
                  "settings": {"innodb_buffer_pool_size": "128M"}},
                 {"name": "pg", "engine": "postgresql"}],
        dataset={"shape": "vehicle", "records": RECORDS, "seed": SEED,
                 "source": source(claim, ["mot/test_result_*.csv.gz"])},
        runner={"pods": 2, "threads": 2, "resources": {"requests": {"cpu": "100m"}}},
        phases=[{"name": "load", "type": "insert", "batchSize": 50},
                # every key once (distinct keys, all records): a miss is an error
                {"name": "reads", "type": "pointReads", "operations": RECORDS},
                {"name": "hold", "type": "pointReads", "duration": "45s", "targetRate": 20}],
    )  # fmt: skip
    apply_run(kube, name, spec)
    try:
        counted = counted_while_held(kube, name)
        status = run_status(kube, name)
        for target in status["targets"]:
            load, reads, _ = target["phases"]
            assert load["records"] == RECORDS, target["name"]
            assert (reads["operations"], reads["errors"]) == (RECORDS, 0), target["name"]
        expected = expected_count(tmp_path)
        assert counted == {"mysql": expected, "pg": expected}
    finally:
        delete_run(kube, name)


def test_a_broken_row_fails_the_run_naming_file_and_line(kube: Kube, claim: str) -> None:
    name = session_name("mot-broken")
    spec = small_spec(
        dataset={"shape": "vehicle", "records": RECORDS, "seed": SEED,
                 "source": source(claim, ["bad/broken.csv"])},
        runner={"pods": 1, "threads": 2, "resources": {"requests": {"cpu": "100m"}}},
        phases=[{"name": "load", "type": "insert", "batchSize": 50}],
    )  # fmt: skip
    apply_run(kube, name, spec)
    status = wait_phase(kube, name, ("Succeeded", "Failed"), 900)
    assert status["phase"] == "Failed", status.get("message")
    failed = condition(status, "Failed")
    assert failed["reason"] == "DataSourceInvalid", failed
    assert (
        f"dataset.source: bad/broken.csv line {BROKEN_LINE}: Mileage (column test_mileage): "
        "'12O45' is not an integer"
    ) in failed["message"]
    (target,) = status.get("targets") or [{"phases": []}]
    assert all(p.get("status") != "succeeded" for p in target.get("phases") or []), target
    delete_run(kube, name)
