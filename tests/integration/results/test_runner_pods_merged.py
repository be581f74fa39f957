"""Runner pods in Job mode hand their files to the service, which merges them
exactly: the same figures as merging the pods' directories by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dbbench_local.results_service import ResultsService
from dbbench_runner.merge import merge
from tests.fixtures.mariadb import MariaDBServer, free_port
from tests.fixtures.results_service import RUN_A, as_json, request, token_for
from tests.support.runner_files import check_results, mariadb_target

pytestmark = pytest.mark.integration

STEP = "maria/oltp/1"


def step_file(tmp_path: Path, target: dict[str, Any], phase: dict[str, Any], pods: int) -> Path:
    path = tmp_path / "step.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "target": target,
                "dataset": {"shape": "flat45", "records": 2000, "recordSize": 256, "seed": 3},
                "phase": phase,
                "pod": {"count": pods},
                "threads": 2,
                "processes": 1,
                "progressEvery": 0.5,
            }
        )
    )
    return path


def job(
    service: ResultsService, config: Path, out: Path, index: int, **env: str
) -> subprocess.Popen[str]:
    environment = {
        **os.environ,
        "JOB_COMPLETION_INDEX": str(index),
        "DBBENCH_RESULTS_URL": service.url,
        "DBBENCH_RESULTS_TOKEN": token_for(service, RUN_A),
        "DBBENCH_RUN": RUN_A.path,
        "DBBENCH_STEP": STEP,
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "dbbench_runner", "job", "--config", str(config), "--out", str(out)],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def test_two_pods_upload_and_the_service_merges_them_exactly(
    service: ResultsService, mariadb: MariaDBServer, tmp_path: Path
) -> None:
    target = mariadb_target(mariadb, "jobs_two_pods")
    load = step_file(tmp_path, target, {"name": "load", "type": "insert", "batchSize": 50}, 2)
    loading = [
        job(service, load, tmp_path / f"l{i}", i, DBBENCH_STEP="maria/load/1") for i in (0, 1)
    ]
    for proc in loading:
        output, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, output
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 80, "update": 20}, "operations": 4000,
           "reportEvery": 500}  # fmt: skip
    config = step_file(tmp_path, target, mix, 2)
    procs = [job(service, config, tmp_path / f"pod{i}", i) for i in range(2)]
    for proc in procs:
        output, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, output

    token = token_for(service, RUN_A)
    step = service.root / RUN_A.path / STEP
    for i in range(2):
        pod = step / f"pod-{i}"
        assert (pod / "summary.json").is_file()
        assert (pod / "progress.json").is_file()
        assert not list(pod.rglob(".upload-*"))
    status, body = request(
        service, "POST", f"/v1/runs/{RUN_A.path}/steps/{STEP}/merge?pods=2", token=token
    )
    assert status == 200, body
    merged = as_json(body)
    assert merged["operations"] == 4000
    assert merged["pods"] == [0, 1]
    check_results(step, operations=4000)

    by_hand = merge(tmp_path / "by-hand", [step / "pod-0", step / "pod-1"]).to_wire()
    for key in ("operations", "errors", "latencyMs", "operationsByType", "throughput"):
        assert merged[key] == by_hand[key], key
    assert json.loads((step / "summary.json").read_text()) == merged
    # Merging again is harmless (an operator that restarted asks twice).
    again = request(
        service, "POST", f"/v1/runs/{RUN_A.path}/steps/{STEP}/merge?pods=2", token=token
    )
    assert as_json(again[1]) == merged


def test_an_unreachable_database_fails_the_pod_with_a_reason(
    service: ResultsService, tmp_path: Path
) -> None:
    target = {
        "name": "maria", "engine": "mariadb", "host": "127.0.0.1", "port": free_port(),
        "user": "root", "password": "x", "connectRetries": 2, "connectTimeout": 1,
    }  # fmt: skip
    config = step_file(tmp_path, target, {"name": "load", "type": "insert"}, 1)
    proc = job(service, config, tmp_path / "out", 0)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 4, output
    assert "database unreachable" in output
    failure = service.root / RUN_A.path / STEP / "pod-0" / "failure.json"
    assert json.loads(failure.read_text())["exitCode"] == 4


def test_a_wrong_token_fails_the_upload_in_bounded_time(
    service: ResultsService, mariadb: MariaDBServer, tmp_path: Path
) -> None:
    target = mariadb_target(mariadb, "jobs_bad_token")
    config = step_file(tmp_path, target, {"name": "load", "type": "insert", "batchSize": 100}, 1)
    proc = job(service, config, tmp_path / "out", 0, DBBENCH_RESULTS_TOKEN="forged")
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 6, output
    assert "HTTP 403" in output
    assert not (service.root / RUN_A.path).exists()


def test_a_job_pod_serves_metrics_from_its_environment_until_after_its_upload(
    service: ResultsService, mariadb: MariaDBServer, tmp_path: Path
) -> None:
    """What the operator sets in a runner Job: the port and linger in the environment,
    the run's name from DBBENCH_RUN in the labels; the figures are still served once
    the files are uploaded, and equal the uploaded summary."""
    target = mariadb_target(mariadb, "jobs_metrics")
    load = step_file(tmp_path, target, {"name": "load", "type": "insert", "batchSize": 50}, 1)
    loading = job(service, load, tmp_path / "load", 0, DBBENCH_STEP="maria/load/1")
    assert loading.wait(timeout=180) == 0
    mix = {"name": "oltp", "type": "mix", "mix": {"read": 80, "update": 20}, "operations": 2000}
    config = step_file(tmp_path, target, mix, 1)
    port = free_port()
    uploaded = service.root / RUN_A.path / STEP / "pod-0" / "summary.json"
    with job(service, config, tmp_path / "pod", 0, DBBENCH_RUNNER_METRICS_PORT=str(port),
             DBBENCH_RUNNER_METRICS_LINGER="60",
             DBBENCH_RUNNER_METRICS_ADDRESS="127.0.0.1") as proc:  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not uploaded.is_file():
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "no upload"
                time.sleep(0.2)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
        finally:
            proc.kill()
    summary = json.loads(uploaded.read_text())
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "dbbench_runner_operations_total"]  # fmt: skip
    assert {s.labels["operation"]: s.value for s in samples} == {
        kind: v["operations"] for kind, v in summary["operationsByType"].items()
    }
    assert {(s.labels["run"], s.labels["target"], s.labels["phase"], s.labels["repeat"])
            for s in samples} == {(RUN_A.name, "mariadb", "oltp", "1")}  # fmt: skip
