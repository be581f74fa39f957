"""Pod Security `baseline` in a benchmark namespace, judged by the real API server's
admission plugin: every database topology's pods and a runner Job's pods pass;
the privileged cache-drop Job would not (which is why it runs in the release
namespace). Workloads are checked through the `warn` mode: the API server
warns for a pod template that would violate the level (dry run, no node needed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.addresses import target_access
from dbbench_operator.specs.cache_drop_job import build_cache_drop_job
from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.plan import plan
from dbbench_operator.specs.runner_job import JobSettings, build_runner_job
from tests.fixtures.topology import COMBINATIONS, combo_id, make_request

pytestmark = pytest.mark.integration

NAMESPACE = "baseline-only"
REPO = Path(__file__).resolve().parents[4]
VIOLATES = "would violate PodSecurity"


@pytest.fixture(scope="module")
def baseline(kube_cluster: Any) -> Iterator[str]:
    kube_cluster.kubectl("create", "namespace", NAMESPACE)
    kube_cluster.kubectl("label", "namespace", NAMESPACE,
                         "pod-security.kubernetes.io/enforce=baseline",
                         "pod-security.kubernetes.io/warn=baseline")  # fmt: skip
    yield NAMESPACE
    kube_cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def dry_run(cluster: Any, docs: list[dict[str, Any]], namespace: str) -> str:
    result = cluster.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-",
                             input=yaml.dump_all(docs, Dumper=yaml.CSafeDumper))  # fmt: skip
    return str(result.stderr)


@pytest.mark.usefixtures("helm_on_path")
@pytest.mark.parametrize("combo", COMBINATIONS, ids=combo_id)
def test_every_topologys_pods_pass_baseline(
    kube_cluster: Any, baseline: str, combo: tuple[str, str, int, int]
) -> None:
    engine, topology, members, shards = combo
    docs = render(make_request(engine, topology, members, shards, namespace=baseline))
    assert VIOLATES not in dry_run(kube_cluster, docs, baseline)


def test_runner_pods_pass_and_the_cache_drop_pod_would_not(
    kube_cluster: Any, baseline: str
) -> None:
    spec = parse_spec(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    run = RunRef("quick", baseline, "1234-uid")
    step = plan(spec)[1]
    settings = JobSettings("dbbench/runner:0.1.0", "Never", "http://results:8080", 600)
    job = build_runner_job(run, spec, step, target_access(run, spec, 0), settings,
                           database_pods={})  # fmt: skip
    assert VIOLATES not in dry_run(kube_cluster, [job], baseline)
    drop = build_cache_drop_job(run, step, "node-1", "dbbench/runner:0.1.0", baseline)
    warned = dry_run(kube_cluster, [drop], baseline)
    assert VIOLATES in warned, "the check must be able to fail"
    assert "privileged" in warned
