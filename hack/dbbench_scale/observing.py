"""Reading the simulated cluster as the admin: raw JSON over HTTPS (the typed
client takes seconds to deserialize thousands of pods), the API server's
/metrics, and the counts the script waits on."""

from __future__ import annotations

import json
import ssl
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from dbbench_local.controlplane import ControlPlane
from dbbench_scale.placement import RUN_UID_LABEL

T = TypeVar("T")
RUNS = "/apis/dbbench.io/v1alpha1/benchmarkruns"
# What a run owns, directly or through its StatefulSets, Deployments, Jobs and
# Services (their controllers' ControllerRevisions, ReplicaSets, Pods, claims
# and EndpointSlices carry the run's label too).
OWNED = (
    ("/api/v1", "pods"), ("/api/v1", "services"), ("/api/v1", "configmaps"),
    ("/api/v1", "secrets"), ("/api/v1", "persistentvolumeclaims"),
    ("/apis/apps/v1", "statefulsets"), ("/apis/apps/v1", "deployments"),
    ("/apis/apps/v1", "replicasets"), ("/apis/apps/v1", "controllerrevisions"),
    ("/apis/batch/v1", "jobs"), ("/apis/discovery.k8s.io/v1", "endpointslices"),
    ("/apis/networking.k8s.io/v1", "networkpolicies"),
)  # fmt: skip
# Counted by namespace, not by label: in the runs' namespaces every claim is a
# run's, and a claim that lost its label would still be a leftover.
UNLABELLED = {"persistentvolumeclaims"}
# The API server's answer to a list as metadata alone (kubectl's `get -o name` asks so).
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass
class Api:
    plane: ControlPlane

    def __post_init__(self) -> None:
        self._ssl = ssl.create_default_context(cafile=str(self.plane.ca))

    def text(self, path: str, accept: str = "application/json", **query: str) -> str:
        url = f"{self.plane.server}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(
            url, headers={"Authorization": f"Bearer {self.plane.admin_token}", "Accept": accept}
        )
        with urllib.request.urlopen(request, context=self._ssl, timeout=60) as response:
            return str(response.read().decode())

    def create(self, path: str, body: Mapping[str, Any]) -> None:
        request = urllib.request.Request(
            f"{self.plane.server}{path}", data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Bearer {self.plane.admin_token}",
                     "Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, context=self._ssl, timeout=60):
            pass

    def delete_collection(self, path: str, **query: str) -> None:
        """One DELETE for every object of a collection (kubectl deletes one by one:
        900 runs took over its 120 s timeout on a busy API server)."""
        url = f"{self.plane.server}{path}?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(
            url, method="DELETE", headers={"Authorization": f"Bearer {self.plane.admin_token}"}
        )
        with urllib.request.urlopen(request, context=self._ssl, timeout=120):
            pass

    def items(self, path: str, **query: str) -> list[dict[str, Any]]:
        return list(json.loads(self.text(path, **query))["items"])

    def metadata(self, path: str, **query: str) -> list[dict[str, Any]]:
        """The items' metadata only (a PartialObjectMetadataList): what counting
        needs, without the API server encoding, and this script parsing, every
        pod's spec and every ConfigMap's data on the same two cores."""
        answer = json.loads(self.text(path, accept=METADATA_ONLY, **query))
        return [item["metadata"] for item in answer.get("items") or []]  # null when none

    def metrics(self) -> str:
        return self.text("/metrics")


def wait_for(probe: Callable[[], T | None], timeout: float, every: float = 0.5) -> T | None:
    """`probe()` until it returns something; None after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(every)
    return None


@dataclass(frozen=True)
class Snapshot:
    """The runs' phases and their pods: what the script waits to stop moving."""

    phases: Mapping[str, int]
    pods: int
    scheduled: int
    unsteady: int = 0  # runs not yet where their shape holds them (`steady`)

    def line(self) -> str:
        phases = " ".join(f"{k}={v}" for k, v in sorted(self.phases.items()))
        behind = f"; {self.unsteady} not yet steady" if self.unsteady else ""
        return f"{phases}; pods {self.scheduled}/{self.pods} scheduled{behind}"


def steady(run: Mapping[str, Any]) -> bool:
    """Whether a run of `fleet` has reached the state its shape holds it in: a run
    against the external target runs its step (its runner pod kept running by
    kwok); the others wait with a phase (Provisioning: their databases never become
    ready; Pending: their nodes are held). A phase alone is not enough: a slow
    operator leaves new external runs Provisioning for a while, which looks
    settled to a count of phases that does not move."""
    phase = (run.get("status") or {}).get("phase")
    if not phase:
        return False
    if str(run["metadata"]["name"]).endswith("-external"):
        return phase in ("Running", "Failed")  # a failure is reported, not waited for
    return True


def snapshot(api: Api) -> Snapshot:
    runs = api.items(RUNS)
    phases = Counter(str((r.get("status") or {}).get("phase") or "(none)") for r in runs)
    pods = api.items("/api/v1/pods", labelSelector=RUN_UID_LABEL)
    scheduled = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
    unsteady = sum(1 for r in runs if not steady(r))
    return Snapshot(dict(phases), len(pods), scheduled, unsteady)


def settle(api: Api, timeout: float, quiet: int = 2, every: float = 3.0) -> tuple[Snapshot, bool]:
    """Wait until every run is steady and nothing moved for `quiet` polls.
    (the last snapshot, whether it settled before `timeout`)."""
    deadline = time.monotonic() + timeout
    last, same = snapshot(api), 0
    while time.monotonic() < deadline:
        time.sleep(every)
        now = snapshot(api)
        same = same + 1 if now == last and not now.unsteady else 0
        last = now
        if same >= quiet:
            return now, True
    return last, False


def failures(api: Api) -> Counter[str]:
    """Failed runs by the reason of their Failed condition."""
    reasons: Counter[str] = Counter()
    for run in api.items(RUNS):
        status = run.get("status") or {}
        if status.get("phase") != "Failed":
            continue
        failed = [c for c in status.get("conditions") or [] if c.get("type") == "Failed"]
        reasons[failed[0].get("reason", "?") if failed else "?"] += 1
    return reasons


def leftovers(api: Api, namespaces: set[str]) -> dict[str, int]:
    """Objects of the deleted runs still in the API, by kind (runs included), read
    as metadata alone: polled every 2 s while the operator deletes, full lists (all
    pods, every ConfigMap's plan) cost the API server and this script CPU that the
    deletion being measured needed."""
    found = {"benchmarkruns": len(api.metadata(RUNS))}
    for group, kind in OWNED:
        if kind in UNLABELLED:
            items = [i for i in api.metadata(f"{group}/{kind}") if i["namespace"] in namespaces]
        else:
            items = api.metadata(f"{group}/{kind}", labelSelector=RUN_UID_LABEL)
        found[kind] = len(items)
    return {k: v for k, v in found.items() if v}
