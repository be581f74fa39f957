"""The chart grants exactly what the code calls: `k8s/permissions.RULES`, per scope.

`kube` refuses any call the table does not declare, so the table covers every
call; here every combination of the values that change RBAC is rendered and
the effective grants (role -> where it is bound) compared with the table. The
other direction (every declared permission is used) is checked on the real
node: `tests/e2e/test_tenant.py` reads the operator's log of first uses.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from dbbench_operator.k8s import permissions
from tests.support.helm import by_kind, render

Grants = dict[tuple[str, str, str], set[tuple[str, str]]]  # (scope, where) -> {(group, res)}


def _rules(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    found = set()
    for rule in role["rules"]:
        # Only the users' browser proxy is narrowed by name (the aggregated view/edit
        # roles and the results reader); counted as the whole resource, so that the
        # operator being bound to it would show as a grant the table lacks.
        if "resourceNames" in rule:
            assert (rule["resources"], rule["verbs"]) == (["services/proxy"], ["get"]), rule
        for group, resource, verb in itertools.product(
            rule["apiGroups"], rule["resources"], rule["verbs"]
        ):
            assert "*" not in (group, resource, verb), rule
            found.add((group, resource, verb))
    return found


def effective(manifests: list[dict[str, Any]], sa: str = "dbbench") -> dict[str, set[Any]]:
    """What the operator's ServiceAccount may do: 'cluster-wide' or '<namespace>' -> rules."""
    roles = {
        (r["kind"], r["metadata"].get("namespace"), r["metadata"]["name"]): _rules(r)
        for r in by_kind(manifests, "ClusterRole") + by_kind(manifests, "Role")
    }
    grants: dict[str, set[Any]] = {}
    for binding in by_kind(manifests, "ClusterRoleBinding") + by_kind(manifests, "RoleBinding"):
        if not any(s["name"] == sa for s in binding["subjects"]):
            continue
        ref = binding["roleRef"]
        where = binding["metadata"].get("namespace") or "cluster-wide"
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        grants.setdefault(where, set()).update(roles[(ref["kind"], namespace, ref["name"])])
    return grants


def declared(scope: str, values: dict[str, bool]) -> set[tuple[str, str, str]]:
    return {
        (rule.group, rule.resource, verb)
        for rule in permissions.RULES
        if rule.scope == scope and (not rule.when or values[rule.when])
        for verb in rule.verbs
    }


COMBINATIONS = [
    {"watchNamespaces": w, "coldCache": c, "networkPolicy": n}
    for w, c, n in itertools.product([False, True], repeat=3)
]


@pytest.mark.parametrize("given", COMBINATIONS, ids=lambda v: ",".join(k for k in v if v[k]))
def test_the_rendered_grants_are_exactly_the_declared_permissions(given: dict[str, bool]) -> None:
    watched = ["team-a", "team-b"] if given["watchNamespaces"] else []
    manifests = render({
        "watchNamespaces": watched,
        "coldCache": {"allowPrivilegedPods": given["coldCache"]},
        "networkPolicy": {"enabled": given["networkPolicy"]},
    })  # fmt: skip
    grants = effective(manifests)
    cluster, runs, release = (declared(s, given) for s in ("cluster", "runs", "release"))
    if watched:
        assert grants.pop("cluster-wide") == cluster
        for namespace in watched:
            assert grants.pop(namespace) == runs, namespace
    else:
        assert grants.pop("cluster-wide") == cluster | runs
    if given["coldCache"]:
        assert grants.pop("dbbench-system") == release
    assert grants == {}, f"grants nobody declared: {grants}"


def test_every_rule_says_why_and_no_verb_is_listed_twice() -> None:
    seen = set()
    assert permissions.RULES
    for rule in permissions.RULES:
        assert len(rule.why) > 20, rule
        assert len(set(rule.verbs)) == len(rule.verbs), rule
        for verb in rule.verbs:
            key = (rule.by, rule.scope, rule.group, rule.resource, verb)
            assert key not in seen, key
            seen.add(key)
    # What nothing calls stays out: the reductions of issue 17.
    everything = {(r.group, r.resource, v) for r in permissions.RULES for v in r.verbs}
    for unused in [
        ("", "secrets", "list"),
        ("", "secrets", "watch"),
        ("", "pods/log", "get"),
        ("", "persistentvolumeclaims", "create"),
        ("events.k8s.io", "events", "create"),
        ("", "pods", "get"),
        ("batch", "jobs", "update"),
        # ("", "nodes", "watch") is used since issue 19: admission reads nodes from
        # a watch instead of listing them on every pass of a waiting run.
    ]:
        assert unused not in everything, unused  # fmt: skip
