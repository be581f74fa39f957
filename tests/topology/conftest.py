"""Shared builders for topology tests: requests for every engine x topology."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_operator.specs.databases.rendering import render
from dbbench_operator.specs.databases.request import Hardware, Storage, TopologyRequest

REPO = Path(__file__).resolve().parents[2]

HARDWARE = Hardware(
    node_selector={"dbbench.io/pool": "db-large", "kubernetes.io/arch": "amd64"},
    tolerations=(
        {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"},
    ),
    affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In",
                         "values": ["m6i.2xlarge"]},
                    ]}
                ]
            }
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {
                    "topologyKey": "topology.kubernetes.io/zone",
                    "labelSelector": {"matchLabels": {"team": "noisy"}}}},
            ]
        },
    },
    resources={"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi"}},
    storage=Storage(storage_class_name="fast-ssd", size="50Gi"),
)  # fmt: skip

# engine, topology, members, shards: every combination the acceptance names.
COMBINATIONS: list[tuple[str, str, int, int]] = [
    ("mongodb", "standalone", 1, 0),
    ("mongodb", "replicaSet", 1, 0),
    ("mongodb", "replicaSet", 3, 0),
    ("mongodb", "replicaSet", 5, 0),
    ("mongodb", "sharded", 3, 2),
    ("mongodb", "sharded", 3, 3),
    ("mysql", "standalone", 1, 0),
    ("mysql", "primaryReplica", 2, 0),
    ("mysql", "primaryReplica", 3, 0),
    ("mariadb", "standalone", 1, 0),
    ("mariadb", "primaryReplica", 2, 0),
    ("mariadb", "primaryReplica", 3, 0),
    ("postgresql", "standalone", 1, 0),
    ("postgresql", "primaryReplica", 2, 0),
    ("postgresql", "primaryReplica", 3, 0),
]


def combo_id(combo: tuple[str, str, int, int]) -> str:
    engine, topology, members, shards = combo
    return f"{engine}-{topology}-m{members}" + (f"-s{shards}" if shards else "")


def make_request(
    engine: str, topology: str, members: int = 1, shards: int = 0, **extra: Any
) -> TopologyRequest:
    fields: dict[str, Any] = {
        "run_name": "nightly-compare",
        "run_uid": "1f0c9a57-3b9e-4c55-9d59-8a1b6f2f4e11",
        "namespace": "perf",
        "target_name": f"{engine}-{topology}".lower(),
        "engine": engine,
        "topology": topology,
        "members": members,
        "shards": shards,
        "hardware": HARDWARE,
        "credentials_secret": "nightly-compare-creds",
        **extra,
    }
    return TopologyRequest(**fields)


@pytest.fixture(scope="session")
def helm_on_path() -> str:
    """helm from .tools/bin (made by `make tools`) or PATH, for `render`."""
    candidate = REPO / ".tools" / "bin" / "helm"
    found = str(candidate) if candidate.exists() else shutil.which("helm")
    if found is None:
        pytest.fail("helm not found in .tools/bin or PATH: run `make tools`")
    os.environ.setdefault("DBBENCH_HELM", found)
    return found


@pytest.fixture(scope="module")
def namespace(kube_cluster: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace per test module: the module's NAMESPACE."""
    name = request.module.NAMESPACE
    kube_cluster.kubectl("create", "namespace", name)
    yield name
    kube_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def server_dry_run(
    kube_cluster: Any, combo: tuple[str, str, int, int], namespace: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A combination rendered and applied with --dry-run=server: (rendered, accepted)."""
    engine, topology, members, shards = combo
    docs = render(make_request(engine, topology, members, shards, namespace=namespace))
    result = kube_cluster.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", "-o", "yaml",
        input=yaml.safe_dump_all(docs),
    )  # fmt: skip
    accepted = [item for doc in yaml.safe_load_all(result.stdout) if doc
                for item in (doc.get("items") or [doc])]  # fmt: skip
    return docs, accepted
