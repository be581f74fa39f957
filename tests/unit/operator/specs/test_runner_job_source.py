"""dataset.source in the runner Jobs the operator builds (pure builders): the insert
step's pods mount the claim read-only where the step file says the files are."""

from __future__ import annotations

import json
from typing import Any

from dbbench_contract.api import parse_spec
from dbbench_contract.api.sources import SOURCE_MOUNT
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import (
    JobSettings,
    build_runner_job,
    build_step_config,
    build_step_configmap,
)
from dbbench_runner.config import parse_config
from tests.support.inspection_files import mapping

RUN = RunRef(name="mot", namespace="team-a", uid="1234-uid")
SETTINGS = JobSettings(
    image="dbbench/runner:0.1.0", pull_policy="IfNotPresent",
    results_url="http://dbbench-results.dbbench-system.svc:8080", deadline_seconds=900,
)  # fmt: skip
SPEC = parse_spec({
    "targets": [{"name": "my", "engine": "mysql"}, {"name": "pg", "engine": "postgresql"}],
    "runner": {"pods": 2, "threads": 4},
    "dataset": {"shape": "vehicle", "records": 1000, "source": {
        "claimName": "mot-2021", "files": ["mot/test_result_*.csv.gz"], "format": "csv",
        **mapping(empty=["Items"])}},
    "phases": [{"name": "load", "type": "insert", "batchSize": 50},
               {"name": "reads", "type": "pointReads", "duration": "1m"}],
})  # fmt: skip


def job(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the pod spec, the step file) of plan step `index`."""
    step = plan(SPEC)[index]
    target = next(i for i, t in enumerate(SPEC.targets) if t.name == step.target)
    access = target_access(RUN, SPEC, target)
    manifest = build_runner_job(RUN, SPEC, step, access, SETTINGS, database_pods={})
    config = build_step_config(SPEC, step, access)
    step_file = json.loads(build_step_configmap(RUN, step, config)["data"]["step.yaml"])
    return manifest["spec"]["template"]["spec"], step_file


def test_the_load_steps_pods_mount_the_claim_read_only_where_the_runner_reads() -> None:
    loads = [i for i, s in enumerate(plan(SPEC)) if s.phase == "load"]
    assert len(loads) == 2  # one load per target, each from the files
    for index in loads:
        pod, step_file = job(index)
        volume = next(v for v in pod["volumes"] if v["name"] == "source")
        assert volume == {
            "name": "source",
            "persistentVolumeClaim": {"claimName": "mot-2021", "readOnly": True},
        }
        mounts = pod["containers"][0]["volumeMounts"]
        assert {"name": "source", "mountPath": SOURCE_MOUNT, "readOnly": True} in mounts
        # The step file names the files under that mount, and the runner takes it as a
        # load of the files (each pod with its index from the Indexed Job).
        assert step_file["dataset"]["sourceRoot"] == SOURCE_MOUNT
        assert step_file["dataset"]["source"]["files"] == ["mot/test_result_*.csv.gz"]
        config = parse_config({**step_file, "pod": {**step_file["pod"], "index": 1}})
        assert config.loads_source
        assert config.workers_total == 8  # rows i, i+8, ... per connection


def test_reading_steps_mount_nothing() -> None:
    reads = next(i for i, s in enumerate(plan(SPEC)) if s.phase == "reads")
    pod, step_file = job(reads)
    assert all(v["name"] != "source" for v in pod["volumes"])
    assert all(m["name"] != "source" for m in pod["containers"][0]["volumeMounts"])
    config = parse_config({**step_file, "pod": {**step_file["pod"], "index": 0}})
    assert not config.loads_source
