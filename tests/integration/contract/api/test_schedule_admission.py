"""The BenchmarkSchedule CRD against the real kube-apiserver: each invalid manifest
(tests/data/schedules/invalid, its first line the expected message) is refused
naming the field, the template by the run's own schema and CEL rules; the example
is accepted, and what the API server stores (its defaults applied) parses to the
same model; the status and printer columns work."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api.schedule import BenchmarkScheduleStatus, parse_schedule_spec
from tests.support.manifests import (
    INVALID_SCHEDULES,
    SCHEDULE_EXAMPLES,
    crd_and_namespace,
    expected_message,
    install_schedule_crd,
    load,
)

pytestmark = pytest.mark.integration

NAMESPACE = "dbbench-schedule-model-test"


@pytest.fixture(scope="module")
def cluster(kube_cluster: Any) -> Iterator[Any]:
    """The session control plane with both CRDs installed and a test namespace."""
    with crd_and_namespace(kube_cluster, NAMESPACE, "dbbench-schedule-test") as cluster:
        install_schedule_crd(cluster, "dbbench-schedule-test")
        yield cluster


def dry_run_create(cluster: Any, path: Path) -> Any:
    return cluster.kubectl(
        "create", "--dry-run=server", "-n", NAMESPACE, "-f", str(path), "-o", "json", check=False
    )


def test_there_are_invalid_schedules_and_an_example() -> None:
    assert len(INVALID_SCHEDULES) >= 10
    assert SCHEDULE_EXAMPLES


@pytest.mark.parametrize("path", INVALID_SCHEDULES, ids=lambda p: p.name)
def test_invalid_schedule_is_rejected_naming_the_field(cluster: Any, path: Path) -> None:
    result = dry_run_create(cluster, path)
    assert result.returncode != 0, f"{path.name} was accepted"
    message = result.stderr + result.stdout
    assert expected_message(path) in message, message


@pytest.mark.parametrize("path", SCHEDULE_EXAMPLES, ids=lambda p: p.name)
def test_example_schedule_is_accepted_as_the_model_reads_it(cluster: Any, path: Path) -> None:
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-n", NAMESPACE, "-f", str(path), "-o", "json", check=False
    )
    assert result.returncode == 0, result.stderr
    stored = json.loads(result.stdout)
    assert parse_schedule_spec(stored["spec"]) == parse_schedule_spec(load(path)["spec"])
    # The server's defaults are the model's (CronJob's: Forbid, 3 and 1 kept).
    assert stored["spec"]["suspend"] is False
    assert stored["spec"]["template"]["spec"]["cleanup"] == "Delete"


def test_server_defaults_are_cronjobs(cluster: Any) -> None:
    manifest = {
        "apiVersion": "dbbench.io/v1alpha1",
        "kind": "BenchmarkSchedule",
        "metadata": {"name": "defaults"},
        "spec": {
            "schedule": "@daily",
            "template": {"spec": {
                "targets": [{"name": "db", "engine": "mariadb"}],
                "phases": [{"name": "r", "type": "pointReads", "duration": "1m"}],
            }},
        },
    }  # fmt: skip
    result = cluster.kubectl(
        "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", "-o", "json",
        input=json.dumps(manifest),
    )  # fmt: skip
    stored = json.loads(result.stdout)["spec"]
    assert (stored["concurrencyPolicy"], stored["suspend"]) == ("Forbid", False)
    assert (stored["successfulRunsHistoryLimit"], stored["failedRunsHistoryLimit"]) == (3, 1)
    assert "startingDeadlineSeconds" not in stored
    expected = parse_schedule_spec(manifest["spec"]).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    assert stored == expected


def test_status_and_printer_columns(cluster: Any) -> None:
    (example,) = [p for p in SCHEDULE_EXAMPLES if p.name == "nightly.yaml"]
    cluster.kubectl("create", "-n", NAMESPACE, "-f", str(example))
    try:
        status = BenchmarkScheduleStatus.model_validate({
            "observedGeneration": 1,
            "lastScheduleTime": "2026-11-28T01:30:00Z",
            "nextScheduleTime": "2026-11-29T01:30:00Z",
            "active": ["nightly-29405850"],
            "lastRun": "nightly-29405850",
            "latestVerdict": {"run": "nightly-29404410", "reason": "Regression",
                              "message": "ops/s of oltp on mariadb: 1200 -> 900"},
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Valid",
                            "lastTransitionTime": "2026-11-28T01:00:00Z"}],
        })  # fmt: skip
        body = {"status": status.model_dump(by_alias=True, exclude_none=True, mode="json")}
        cluster.kubectl(
            "patch", "benchmarkschedule", "nightly", "-n", NAMESPACE, "--subresource=status",
            "--type=merge", "-p", json.dumps(body),
        )  # fmt: skip
        stored = json.loads(
            cluster.kubectl("get", "bs", "nightly", "-n", NAMESPACE, "-o", "json").stdout
        )
        assert BenchmarkScheduleStatus.model_validate(stored["status"]) == status
        table = cluster.kubectl("get", "bs", "nightly", "-n", NAMESPACE).stdout.splitlines()
        assert table[0].split() == [
            "NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST", "RUN", "NEXT", "RUN", "VERDICT",
            "AGE",
        ]  # fmt: skip
        row = table[1]
        for shown in ("nightly", "30 2 * * *", "false", "nightly-29405850",
                      "2026-11-29T01:30:00Z", "Regression"):  # fmt: skip
            assert shown in row, (shown, row)
    finally:
        cluster.kubectl("delete", "bs", "nightly", "-n", NAMESPACE, "--wait=false", check=False)


def test_kubectl_explain_teaches_the_schedule(cluster: Any) -> None:
    # The CRD's OpenAPI is published asynchronously after it is Established.
    deadline = time.monotonic() + 30
    while True:
        result = cluster.kubectl("explain", "bs.spec.concurrencyPolicy", check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert result.returncode == 0, result.stderr
    assert "Replace deletes the active run" in " ".join(result.stdout.split())
    template = cluster.kubectl("explain", "bs.spec.template.spec.phases").stdout
    assert "Steps run in order against each target" in " ".join(template.split())
