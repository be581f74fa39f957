"""Every API permission the operator uses, and why: the chart grants exactly these.

`api` refuses a call that is not declared here (so the table is never short of
what the code calls) and logs each declared permission the first time it is
used; tests compare the chart's rules with this table (`tests/unit/chart`) and the
permissions the end-to-end runs used with it (`tests/e2e/test_tenant.py`).

Scopes: `cluster` (a ClusterRole bound cluster-wide), `runs` (the namespaces
the operator serves: bound cluster-wide with --all-namespaces, per namespace
with `watchNamespaces`), `release` (the operator's own namespace). `when`
names the chart value a rule depends on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["cluster", "runs", "release"]
When = Literal["", "watchNamespaces", "networkPolicy", "coldCache"]


@dataclass(frozen=True)
class Rule:
    group: str
    resource: str
    verbs: tuple[str, ...]
    scope: Scope
    why: str
    by: Literal["operator", "kopf", "admission"] = "operator"
    when: When = ""


_DELETED = (
    "a deleted run's children go at once, one request per kind selected by the run's uid "
    "label, not one object at a time at the garbage collector's pace (about 20 a second)"
)
_RUN_CHILDREN: tuple[tuple[str, str, When], ...] = (
    ("apps", "statefulsets", ""), ("apps", "deployments", ""), ("batch", "jobs", ""),
    ("apps", "replicasets", ""), ("", "pods", ""), ("", "persistentvolumeclaims", ""),
    ("apps", "controllerrevisions", ""), ("", "services", ""),
    ("discovery.k8s.io", "endpointslices", ""), ("", "configmaps", ""), ("", "secrets", ""),
    ("networking.k8s.io", "networkpolicies", "networkPolicy"),
)  # fmt: skip

RULES: tuple[Rule, ...] = (
    # -- kopf (its own calls) ------------------------------------------------------
    Rule("apiextensions.k8s.io", "customresourcedefinitions", ("list", "watch"), "cluster",
         "kopf notices the BenchmarkRun CRD being installed or upgraded", "kopf"),
    Rule("", "namespaces", ("list", "watch"), "cluster",
         "kopf starts a watcher when a listed namespace appears", "kopf", "watchNamespaces"),
    Rule("dbbench.io", "benchmarkruns", ("list", "watch", "patch"), "runs",
         "kopf watches runs and patches its finalizer and progress annotations", "kopf"),
    Rule("", "pods", ("list", "watch"), "runs",
         "kopf watches the runs' pods (label dbbench.io/run-uid, filtered by the API "
         "server): a change starts the owning run's next pass", "kopf"),
    Rule("batch", "jobs", ("list", "watch"), "runs",
         "kopf watches the runs' Jobs (label dbbench.io/run-uid): a change starts the "
         "owning run's next pass", "kopf"),
    Rule("apps", "statefulsets", ("list", "watch"), "runs",
         "kopf watches the runs' StatefulSets (label dbbench.io/run-uid): a change starts "
         "the owning run's next pass", "kopf"),
    Rule("", "nodes", ("list", "watch"), "cluster",
         "kopf watches nodes: admission reads node pools from memory, not from a list "
         "per pass", "kopf"),
    Rule("", "events", ("create",), "runs", "kopf posts the runs' and schedules' Events", "kopf"),
    Rule("dbbench.io", "benchmarkschedules", ("list", "watch", "patch"), "runs",
         "kopf watches schedules (a timer each) and patches its finalizer on them", "kopf"),
    Rule("dbbench.io", "benchmarkschedules/finalizers", ("update",), "runs",
         "a schedule's runs carry blockOwnerDeletion: OwnerReferencesPermissionEnforcement "
         "(OpenShift) checks this on every run a schedule creates", "admission"),
    Rule("dbbench.io", "benchmarkruns/finalizers", ("update",), "runs",
         "children carry blockOwnerDeletion: the OwnerReferencesPermissionEnforcement "
         "admission plugin (OpenShift) checks this on every child created", "admission"),
    # -- the operator's own calls (k8s/api.py) ----------------------------------------
    Rule("", "nodes", ("list",), "cluster",
         "admitting: the nodes of a run's pool (hardware.exclusive, requests that fit no node); "
         "a step's nodes.json: each node its pods ran on, listed by metadata.name (no get)"),
    Rule("dbbench.io", "benchmarkruns", ("list",), "runs",
         "admitting: which runs hold a node pool"),
    Rule("dbbench.io", "benchmarkruns/status", ("patch",), "runs",
         "each pass's status patch (written by the run's own loop, `controller/run_loop`)"),
    Rule("dbbench.io", "benchmarkruns", ("create", "delete"), "runs",
         "schedules: a run per scheduled time; runs beyond the history limits, and the active "
         "run with concurrencyPolicy Replace, deleted"),
    Rule("dbbench.io", "benchmarkschedules/status", ("patch",), "runs",
         "a schedule's status: last and next time, active runs, latest verdict, Accepted"),
    Rule("", "secrets", ("create", "get", "patch"), "runs",
         "the run's credentials Secret (created once, its owner checked, an older Secret "
         "given the results token); reading an external target's uriSecretRef"),
    # Server-side apply is a PATCH that the API server also authorizes as `create`
    # when the object is new: every applied kind needs both.
    Rule("", "configmaps", ("get", "create", "patch"), "runs",
         "the run's plan and step files (server-side apply, after checking the owner)"),
    Rule("", "services", ("create", "patch", "list", "delete"), "runs",
         "the databases' Services: applied from the topology charts, deleted when retired"),
    Rule("apps", "statefulsets", ("get", "create", "patch", "list", "delete"), "runs",
         "the databases: applied, read for readiness, deleted or scaled to zero when retired"),
    Rule("apps", "deployments", ("create", "patch", "list", "delete"), "runs",
         "mongos routers of sharded targets: applied, retired"),
    Rule("batch", "jobs", ("create", "get", "list", "delete"), "runs",
         "runner Jobs: created once per step, followed, stopped when a run fails"),
    Rule("", "pods", ("list", "delete"), "runs",
         "database and runner pods: why they wait, restarts; deleted to restart the "
         "databases for cache: cold and coldOnce"),
    Rule("", "events", ("list",), "runs",
         "why a pod, StatefulSet or Job has not started (probe failures, FailedCreate)"),
    Rule("networking.k8s.io", "networkpolicies", ("create", "patch", "list", "delete"), "runs",
         "per-target NetworkPolicies: only the run's runner pods, the target's own members "
         "and the operator reach a database", when="networkPolicy"),
    # A deleted run's children, of every kind it may leave in its namespace
    # (`targets/teardown.run_children`), what controllers made from its objects included.
    *(Rule(group, resource, ("deletecollection",), "runs", _DELETED, when=when)
      for group, resource, when in _RUN_CHILDREN),
    Rule("batch", "jobs", ("create", "list", "delete"), "release",
         "privileged cache-drop Jobs (cache: cold, coldOnce) run in the operator's namespace "
         "only; deleted by the run's cleanup and when the run is deleted", when="coldCache"),
)  # fmt: skip


def declared(scope: Scope | None = None) -> frozenset[tuple[str, str, str]]:
    """(group, resource, verb) the operator's code may call (kopf's own not included)."""
    return frozenset(
        (r.group, r.resource, verb)
        for r in RULES
        if r.by == "operator" and (scope is None or r.scope == scope)
        for verb in r.verbs
    )
