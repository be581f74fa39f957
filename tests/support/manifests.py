"""Paths and loaders shared by the model tests."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
INVALID = sorted((REPO / "tests" / "data" / "invalid").glob("*.yaml"))
CRD_FILE = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"
SCHEDULE_CRD_FILE = REPO / "crds" / "benchmarkschedules.dbbench.io.yaml"
SCHEDULE_EXAMPLES = sorted((REPO / "examples" / "schedules").glob("*.yaml"))
INVALID_SCHEDULES = sorted((REPO / "tests" / "data" / "schedules" / "invalid").glob("*.yaml"))
# Stored by the API server, refused by the operator (and `dbbench check`).
REFUSED_SCHEDULES = sorted((REPO / "tests" / "data" / "schedules" / "refused").glob("*.yaml"))


def load(path: Path) -> dict[str, Any]:
    body = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    assert isinstance(body, dict)
    return body


def expected_message(path: Path) -> str:
    """The substring after ``# expect:`` on an invalid manifest's first line."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name}: first line must be '# expect: ...'"
    return first.removeprefix("# expect: ").strip()


def gen_crd_module() -> ModuleType:
    """hack/gen_crd.py, imported from its path (hack/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_crd", REPO / "hack" / "gen_crd.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def crd_and_namespace(kube_cluster: Any, namespace: str, manager: str) -> Iterator[Any]:
    """The session control plane with the CRD applied (server-side, as `manager`)
    and a fresh namespace, deleted afterwards."""
    kube_cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={manager}",
        "-f", str(CRD_FILE),
    )  # fmt: skip
    wait_established(kube_cluster)
    kube_cluster.kubectl("create", "namespace", namespace)
    try:
        yield kube_cluster
    finally:
        kube_cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def wait_established(
    cluster: Any, timeout: float = 60, crd: str = "benchmarkruns.dbbench.io"
) -> None:
    cluster.wait_established(crd, timeout)  # dbbench_local.controlplane.ControlPlane


def install_schedule_crd(cluster: Any, manager: str) -> None:
    """The BenchmarkSchedule CRD, applied server-side as `manager`, Established."""
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={manager}",
        "-f", str(SCHEDULE_CRD_FILE),
    )  # fmt: skip
    wait_established(cluster, crd="benchmarkschedules.dbbench.io")
