"""Request -> chart values (pure) -> manifests (`helm template`, I/O).

The charts live in the repository's `charts/` directory. In the operator
image, copy them anywhere and point `DBBENCH_CHARTS_DIR` at the directory
that holds `mongodb/`, `mysql/` and `postgresql/`; helm is taken from
`DBBENCH_HELM` or PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from dbbench_contract.api import DEFAULT_VERSIONS
from dbbench_operator.specs.databases import shard_placement, target_names
from dbbench_operator.specs.databases.replication_flags import role_flags
from dbbench_operator.specs.databases.request import (
    SECRET_KEYFILE_KEY,
    SECRET_PASSWORD_KEY,
    SECRET_USERNAME_KEY,
    TopologyRequest,
)
from dbbench_operator.specs.databases.sizing import engine_settings

HELM_TIMEOUT_S = 60
# libyaml's parser when PyYAML has it (the image's wheel does): ten times the pure
# Python one's speed on `helm template`'s output, parsed for every target of a run.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RenderError(RuntimeError):
    """helm could not render the chart (bad values or a chart bug)."""


def build_values(request: TopologyRequest) -> dict[str, Any]:
    """The chart values for one target: names, shape, settings, hardware, cleanup."""
    hardware = request.hardware
    values: dict[str, Any] = {
        "fullnameOverride": target_names.base_name(request),
        "commonLabels": target_names.common_labels(request),
        "image": {
            "tag": request.version or DEFAULT_VERSIONS[request.engine],
            "reference": request.image or "",
        },
        "topology": request.topology,
        "members": request.members,
        "settings": engine_settings(request),
        "resources": hardware.resources,
        "nodeSelector": hardware.node_selector,
        "tolerations": list(hardware.tolerations),
        "affinity": hardware.affinity,
        "storage": {
            "storageClassName": hardware.storage.storage_class_name or "",
            "size": hardware.storage.size,
        },
        # The operator removes a target after its steps (cleanup: Delete) or scales
        # it to zero (Retain: the data stays for inspection). Volumes always go
        # with their StatefulSet, which the run owns: nothing outlives the run.
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
    }
    if request.engine == "mongodb":
        values["auth"] = {
            "existingSecret": request.credentials_secret,
            "usernameKey": SECRET_USERNAME_KEY,
            "passwordKey": SECRET_PASSWORD_KEY,
            "keyFileKey": SECRET_KEYFILE_KEY,
        }
        values["clusterDomain"] = request.cluster_domain
        if request.protocol_stand_in:
            values["protocolStandIn"] = True
        if request.topology == "sharded":
            values.update(shard_placement.chart_values(request))
    elif request.engine == "postgresql":
        values["auth"] = {
            "existingSecret": request.credentials_secret,
            "usernameKey": SECRET_USERNAME_KEY,
            "passwordKey": SECRET_PASSWORD_KEY,
        }
        values["database"] = request.database
    else:
        values["engine"] = request.engine
        values["auth"] = {
            "existingSecret": request.credentials_secret,
            "passwordKey": SECRET_PASSWORD_KEY,
        }
        values["roleFlags"] = role_flags(request)
    return values


def charts_dir() -> Path:
    """`$DBBENCH_CHARTS_DIR`, else the repository's charts/ next to operator/."""
    configured = os.environ.get("DBBENCH_CHARTS_DIR")
    if configured:
        return Path(configured)
    # operator/dbbench_operator/specs/databases/rendering.py -> <repo>/charts
    return Path(__file__).resolve().parents[4] / "charts"


def helm_binary() -> str:
    found = os.environ.get("DBBENCH_HELM") or shutil.which("helm")
    if not found:
        raise RenderError("helm not found: set DBBENCH_HELM or put helm on PATH")
    return found


def render(request: TopologyRequest) -> list[dict[str, Any]]:
    """Run `helm template` for the request and return the manifests in order."""
    chart = charts_dir() / target_names.chart_name(request)
    if not (chart / "Chart.yaml").is_file():
        raise RenderError(f"chart not found at {chart}: set DBBENCH_CHARTS_DIR")
    argv = [
        helm_binary(), "template", target_names.base_name(request), str(chart),
        "--namespace", request.namespace, "--skip-tests", "--values", "-",
    ]  # fmt: skip
    result = subprocess.run(
        argv,
        input=json.dumps(build_values(request)),  # JSON is YAML, and quicker to write
        capture_output=True,
        text=True,
        check=False,
        timeout=HELM_TIMEOUT_S,
    )
    if result.returncode != 0:
        raise RenderError(f"helm template {chart.name} failed: {result.stderr.strip()}")
    return [doc for doc in yaml.load_all(result.stdout, Loader=_LOADER) if doc]
