"""Names and labels of the objects a run owns directly (not per target).

Per-target objects are named in ``topology.naming``; both use the same label
keys so ``kubectl get all -l dbbench.io/run=<run>`` finds everything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbbench_operator.model import API_VERSION, GROUP, KIND, PLURAL, VERSION

__all__ = ["GROUP", "PLURAL", "VERSION", "RunRef", "adopt", "child_name", "run_labels"]

MANAGED_BY = "dbbench"
_MAX_NAME = 63


@dataclass(frozen=True)
class RunRef:
    """The identity of one BenchmarkRun, read once from its metadata."""

    name: str
    namespace: str
    uid: str
    generation: int = 1

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> RunRef:
        return cls(
            name=str(meta["name"]),
            namespace=str(meta["namespace"]),
            uid=str(meta.get("uid", "")),
            generation=int(meta.get("generation", 1)),
        )


def child_name(run: RunRef, suffix: str) -> str:
    """``<run>-<suffix>``, shortened with a hash when it would pass 63 characters."""
    name = f"{run.name}-{suffix}"
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _MAX_NAME - len(suffix) - 10].rstrip('-')}-{digest}-{suffix}"


def credentials_secret_name(run: RunRef) -> str:
    return child_name(run, "credentials")


def plan_configmap_name(run: RunRef) -> str:
    return child_name(run, "plan")


def run_labels(run: RunRef, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "dbbench",
        "app.kubernetes.io/instance": run.name[:63],
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "dbbench.io/run": run.name[:63],
    }


def owner_reference(run: RunRef) -> dict[str, Any]:
    """Makes the run the controller of a child: deleting the run deletes the child."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": run.name,
        "uid": run.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def adopt(manifest: Mapping[str, Any], run: RunRef) -> dict[str, Any]:
    """A copy of a namespaced manifest owned by the run, in the run's namespace.

    The same job as ``kopf.adopt``, kept pure and free of kopf so builders can
    use it.
    """
    adopted = dict(manifest)
    meta = dict(adopted.get("metadata", {}))
    meta["namespace"] = run.namespace
    meta["ownerReferences"] = [owner_reference(run)]
    meta["labels"] = {**meta.get("labels", {}), "dbbench.io/run": run.name[:63]}
    adopted["metadata"] = meta
    return adopted
