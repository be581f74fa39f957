"""Children found by name are the run's own, or they are not used.

A run's Secret, plan ConfigMap, step ConfigMaps and Jobs are named after the
run, so a run deleted and created again under the same name meets its
predecessor's children until the garbage collector has removed them. Every
lookup here checks the owner's uid: a child of an earlier run of the same
name is waited for (`PreviousRunChildError`: the garbage collector removes it,
since its owner is gone), anything else of that name is refused
(`ForeignChildError`). Nothing here rewrites, adopts or deletes an object the
run does not own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dbbench_contract.api import GROUP, KIND
from dbbench_operator.k8s import api
from dbbench_operator.naming import RunRef


class ForeignChildError(Exception):
    """An object the run needs under a name it does not own."""

    reason = "NameTaken"

    def __init__(self, kind: str, namespace: str, name: str, owner: str) -> None:
        self.kind, self.namespace, self.name, self.owner = kind, namespace, name, owner
        super().__init__(self.describe())

    def describe(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name} exists and is not this run's "
            f"({self.owner}); delete it or give the run another name"
        )


class PreviousRunChildError(ForeignChildError):
    """An object left by an earlier BenchmarkRun of the same name (its owner is gone)."""

    reason = "WaitingForPreviousRun"

    def describe(self) -> str:
        return (
            f"{self.kind} {self.namespace}/{self.name} still belongs to an earlier "
            f"BenchmarkRun of this name ({self.owner}); waiting for the garbage collector "
            "to remove it"
        )


def _owners(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("metadata") or {}).get("ownerReferences") or [])


def owned_by(obj: Mapping[str, Any], run: RunRef) -> bool:
    return any(ref.get("uid") == run.uid for ref in _owners(obj))


def check(obj: Mapping[str, Any], run: RunRef) -> dict[str, Any]:
    """`obj` when the run owns it; else the error saying whose it is."""
    if owned_by(obj, run):
        return dict(obj)
    meta = obj.get("metadata") or {}
    kind, name = str(obj.get("kind") or "object"), str(meta.get("name") or "?")
    namespace = str(meta.get("namespace") or run.namespace)
    runs = [
        ref for ref in _owners(obj)
        if ref.get("kind") == KIND and str(ref.get("apiVersion", "")).startswith(f"{GROUP}/")
    ]  # fmt: skip
    if any(ref.get("name") == run.name for ref in runs):
        uid = next(str(ref.get("uid")) for ref in runs if ref.get("name") == run.name)
        raise PreviousRunChildError(kind, namespace, name, f"uid {uid}")
    owners = ", ".join(f"{r.get('kind')} {r.get('name')}" for r in _owners(obj))
    raise ForeignChildError(kind, namespace, name, f"owned by {owners}" if owners else "no owner")


def get(api_version: str, kind: str, run: RunRef, name: str) -> dict[str, Any] | None:
    """The run's own object of that name in its namespace, or None when there is none."""
    found = api.get(api_version, kind, run.namespace, name)
    return None if found is None else check({"kind": kind, **found}, run)


def create(manifest: Mapping[str, Any], run: RunRef) -> bool:
    """Create once (True), or find the run's own (False); never another's."""
    meta = manifest["metadata"]
    for _ in range(2):  # an earlier run's child may go between the create and the get
        if api.create_if_absent(manifest):
            return True
        if get(manifest["apiVersion"], manifest["kind"], run, meta["name"]) is not None:
            return False
    raise PreviousRunChildError(manifest["kind"], run.namespace, meta["name"], "being deleted")


def apply(manifest: Mapping[str, Any], run: RunRef) -> None:
    """Server-side apply, unless an object of that name belongs to someone else."""
    meta = manifest["metadata"]
    get(manifest["apiVersion"], manifest["kind"], run, meta["name"])
    api.apply(manifest)


def secret_value(run: RunRef, name: str, key: str) -> bytes | None:
    """One key of the run's own Secret (None when the Secret or key is missing)."""
    found = api.read_secret(run.namespace, name)
    if found is None:
        return None
    meta, data = found
    check({"kind": "Secret", "metadata": meta}, run)
    return data.get(key)
