"""The MariaDB `examples/field/*small*.yaml` run to Succeeded on the real node,
one after another, and leave a report.html next to their results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_local.install import NAMESPACE, Kube
from tests.e2e.conftest import apply_run, results_json, wait_for_report, wait_phase

pytestmark = pytest.mark.e2e

FIELD = Path(__file__).resolve().parents[2] / "examples" / "field"
# MongoDB cannot run here (no mongod image); their small variants are checked by
# server-side dry run in tests/model. cache: cold runs: the e2e chart install
# sets coldCache.allowPrivilegedPods (conftest).
MARIADB_SMALL = sorted(p for p in FIELD.glob("*small*.yaml") if "mongodb" not in p.read_text())


@pytest.mark.parametrize("path", MARIADB_SMALL, ids=lambda p: p.name)
def test_small_field_example_succeeds(kube: Kube, path: Path) -> None:
    body: dict[str, Any] = yaml.safe_load(path.read_text())
    name = body["metadata"]["name"]
    apply_run(kube, name, body["spec"])
    status = wait_phase(kube, name, ("Succeeded", "Failed"), timeout=1800)
    assert status["phase"] == "Succeeded", status.get("conditions")
    # The results service renders report.html in the background once the run's
    # summary.json arrives (dbbench_results.reports): allow it a minute.
    files = wait_for_report(kube, status)
    assert "summary.json" in files
    assert "report.html" in files


def test_cold_cache_hot_range_reads_fewer_pages_from_disk(kube: Kube) -> None:
    """Field benchmark 3 on the node: after a restart and a page-cache drop, the hot
    tenth of the md5 order fits the 16 MiB pool and the whole table does not."""
    path = FIELD / "3-cold-cache-small.yaml"
    body: dict[str, Any] = yaml.safe_load(path.read_text())
    name = f"{body['metadata']['name']}-disk"
    apply_run(kube, name, body["spec"])
    status = wait_phase(kube, name, ("Succeeded", "Failed"), timeout=1800)
    assert status["phase"] == "Succeeded", status.get("conditions")
    per_op = {}
    for phase in ("reads-hot-range", "reads-whole-range"):
        summary = results_json(kube, status, f"maria/{phase}/1/summary.json")
        counters = summary["serverCounters"]
        assert counters["diskReadsCounter"] == "Innodb_buffer_pool_reads"
        per_op[phase] = counters["diskReadsPerOperation"]
    print(f"disk reads per operation on the node: {per_op}")
    assert per_op["reads-hot-range"] < per_op["reads-whole-range"] / 2, per_op
    assert "report.html" in wait_for_report(kube, status)
    prefix = status["resultsPath"].split("/", 1)[1]
    html = kube.kubectl("exec", "-n", NAMESPACE, "deploy/dbbench-results", "--", "python", "-c",
                        f"print(open('/results/{prefix}report.html').read())").stdout  # fmt: skip
    assert 'data-section="disk-reads"' in html
    assert "<b data-key='cache' data-value='cold'>" in html
