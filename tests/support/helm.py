"""Running the pinned helm against the chart at the repository root.

helm is built by `make tools` into .tools/bin; a missing helm is a failure,
not a skip, because the test command builds it first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO
TOOLS_BIN = Path(os.environ.get("TOOLS_DIR", REPO / ".tools")) / "bin"
CRD_FILE = REPO / "crds" / "benchmarkruns.dbbench.io.yaml"

Manifest = dict[str, Any]


def helm_binary() -> str:
    search = os.pathsep.join([str(TOOLS_BIN), os.environ.get("PATH", "")])
    found = shutil.which("helm", path=search)
    if found is None:
        pytest.fail(f"helm not found in {TOOLS_BIN} or PATH: run `make tools`")
    return found


def helm(
    *args: str, check: bool = True, kubeconfig: Path | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [helm_binary(), *args]
    if kubeconfig is not None:
        cmd.append(f"--kubeconfig={kubeconfig}")
    # Private helm homes keep the user's repositories and plugins out of the test;
    # one per pytest-xdist worker, so that parallel workers never share one.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    home = Path(tempfile.gettempdir()) / f"dbbench-test-helm-{worker}"
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    result = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180, env=env)
    if check and result.returncode != 0:
        command = " ".join(args)
        raise AssertionError(f"helm {command} failed ({result.returncode}):\n{result.stderr}")
    return result


def values_args(values: Mapping[str, Any] | None, workdir: Path) -> list[str]:
    """`--values FILE` for a values mapping (written to workdir)."""
    if not values:
        return []
    path = workdir / f"values-{len(list(workdir.glob('values-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(dict(values)))
    return ["--values", str(path)]


def template(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = "dbbench",
    namespace: str = "dbbench-system",
    extra: Iterable[str] = (),
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as tmp:
        return helm(
            "template",
            release,
            str(CHART),
            "--namespace",
            namespace,
            *values_args(values, Path(tmp)),
            *extra,
            check=check,
        )


def render(
    values: Mapping[str, Any] | None = None,
    *,
    release: str = "dbbench",
    namespace: str = "dbbench-system",
    extra: Iterable[str] = (),
) -> list[Manifest]:
    """The chart's manifests (templates and test hooks, not crds/) as dicts."""
    out = template(values, release=release, namespace=namespace, extra=extra).stdout
    return [doc for doc in yaml.load_all(out, Loader=yaml.CSafeLoader) if doc]


def by_kind(manifests: Iterable[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def one(
    manifests: Iterable[Manifest], kind: str, name: str | None = None, component: str | None = None
) -> Manifest:
    found = [
        m
        for m in by_kind(manifests, kind)
        if (name is None or m["metadata"]["name"] == name)
        and (
            component is None
            or m["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component
        )
    ]
    assert len(found) == 1, f"expected one {kind} {name or component or ''}, got {len(found)}"
    return found[0]


def operator_container(manifests: Iterable[Manifest]) -> Manifest:
    deployment = one(manifests, "Deployment", component="operator")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["operator"]
    container: Manifest = containers[0]
    return container


def env_of(container: Manifest) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
