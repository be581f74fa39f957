"""The MariaDB `examples/field/*small*.yaml` run to Succeeded on the real node,
one after another, and leave a report.html next to their results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_local.install import Kube
from tests.e2e.conftest import apply_run, wait_for_report, wait_phase

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
