"""examples/field/: one BenchmarkRun per field experiment (docs/field-benchmarks.md),
each with a header comment and a small variant
(tests/unit/contract/api/test_field_example_manifests.py). All pass admission on
the real control plane; the MongoDB targets' database manifests are rendered (the
operator's helm rendering) and accepted by a server-side dry run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import topology_request
from dbbench_operator.specs.databases.rendering import render
from tests.support.manifests import crd_and_namespace, load
from tests.unit.contract.api.test_field_example_manifests import FIELD, SMALL

NAMESPACE = "dbbench-field-test"


@pytest.fixture(scope="module")
def cluster(kube_cluster: Any) -> Iterator[Any]:
    with crd_and_namespace(kube_cluster, NAMESPACE, "dbbench-field-test") as cluster:
        yield cluster


@pytest.mark.integration
@pytest.mark.parametrize("path", FIELD, ids=lambda p: p.name)
def test_field_example_passes_admission(cluster: Any, path: Path) -> None:
    result = cluster.kubectl(
        "create", "--dry-run=server", "-n", NAMESPACE, "-f", str(path), "-o", "json", check=False
    )
    assert result.returncode == 0, result.stderr
    stored = json.loads(result.stdout)
    assert parse_spec(stored["spec"]) == parse_spec(load(path)["spec"])


@pytest.mark.integration
@pytest.mark.parametrize(
    "path", [p for p in SMALL if "mongodb" in p.read_text()], ids=lambda p: p.name
)
def test_mongodb_small_example_renders_and_is_accepted(
    cluster: Any, path: Path, tmp_path: Path
) -> None:
    body = load(path)
    spec = parse_spec(body["spec"])
    run = RunRef(name=body["metadata"]["name"], namespace=NAMESPACE, uid="0000-field")
    assert spec.targets
    for target in spec.targets:
        manifests = render(topology_request(run, spec, target))
        kinds = {m["kind"] for m in manifests}
        assert "StatefulSet" in kinds, (target.name, kinds)
        out = tmp_path / f"{target.name}.yaml"
        out.write_text(yaml.safe_dump_all(manifests))
        result = cluster.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-f", str(out), check=False
        )
        assert result.returncode == 0, result.stderr
