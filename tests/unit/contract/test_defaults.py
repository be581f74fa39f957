"""Defaults exist once: the CRD (kubectl explain), the step file and the readers agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbbench_contract import defaults
from dbbench_contract.api import Phase
from dbbench_contract.step import StepDataset as Dataset

CRD = Path(__file__).resolve().parents[3] / "crds" / "benchmarkruns.dbbench.io.yaml"


def _spec_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["spec"]["properties"]


def test_phase_defaults_are_the_crds() -> None:
    phase = _spec_schema()["phases"]["items"]["properties"]
    step = Phase.model_validate({"name": "p", "type": "insert"})
    assert phase["reportEvery"]["default"] == step.report_every == defaults.REPORT_EVERY
    assert phase["maxErrorRate"]["default"] == step.max_error_rate == defaults.MAX_ERROR_RATE
    assert phase["batchSize"]["default"] == step.batch_size == defaults.BATCH_SIZE
    assert str(defaults.REPORT_EVERY) in phase["reportEvery"]["description"]


def test_dataset_defaults_and_limits_are_the_crds() -> None:
    dataset = _spec_schema()["dataset"]["properties"]
    step = Dataset.model_validate({"shape": "flat45", "records": 1})
    assert dataset["recordSize"]["default"] == step.record_size == defaults.RECORD_SIZE
    assert dataset["seed"]["default"] == step.seed == defaults.SEED
    # Every record size admission accepts, the runner generates.
    assert dataset["recordSize"]["maximum"] == defaults.MAX_RECORD_SIZE
    assert dataset["recordSize"]["minimum"] == defaults.MIN_RECORD_SIZE
    Dataset.model_validate(
        {"shape": "flat45", "records": 1, "recordSize": defaults.MAX_RECORD_SIZE}
    )
