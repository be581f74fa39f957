"""NetworkPolicy ingress semantics, evaluated on objects (for tests).

The local node's CNI (bridge + host-local) does not enforce NetworkPolicies,
so what the policies allow is computed here from their spec, following the
API's documented rules (networking.k8s.io/v1): a pod selected by at least one
policy of type Ingress accepts a connection only when some rule of some such
policy admits both the peer and the port; `from` peers are ORed; a peer with
both selectors needs both; an empty selector selects everything; a missing
`from` or `ports` admits all. ipBlock peers are not used by dbbench and are
refused here rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = Mapping[str, Any]


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels AND matchExpressions); None selects nothing."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _port_allowed(ports: Sequence[Obj] | None, target: Obj, port: int) -> bool:
    if not ports:
        return True
    named = {
        p.get("name"): p.get("containerPort")
        for c in (target.get("spec") or {}).get("containers") or []
        for p in c.get("ports") or []
    }
    for rule in ports:
        given = rule.get("port")
        wanted = named.get(given) if isinstance(given, str) else given
        if given is None or wanted == port:
            return True
    return False


def _peer_allowed(peer: Obj, source: Obj, source_ns: Obj, policy_ns: str) -> bool:
    if "ipBlock" in peer:
        raise ValueError("ipBlock peers are not evaluated here")
    pods, spaces = peer.get("podSelector"), peer.get("namespaceSelector")
    if spaces is None:  # podSelector alone: pods of the policy's own namespace
        in_ns = (source.get("metadata") or {}).get("namespace") == policy_ns
        return in_ns and matches(pods, _labels(source))
    return matches(spaces, _labels(source_ns)) and (pods is None or matches(pods, _labels(source)))


def ingress_allowed(
    policies: Sequence[Obj], target: Obj, source: Obj, source_ns: Obj, port: int
) -> bool:
    """Would `source` (a pod in namespace object `source_ns`) reach `target` on `port`?"""
    namespace = (target.get("metadata") or {}).get("namespace")
    selecting = [
        p for p in policies
        if (p.get("metadata") or {}).get("namespace") == namespace
        and "Ingress" in ((p.get("spec") or {}).get("policyTypes") or ["Ingress"])
        and matches((p.get("spec") or {}).get("podSelector") or {}, _labels(target))
    ]  # fmt: skip
    if not selecting:
        return True  # not isolated
    for policy in selecting:
        for rule in (policy.get("spec") or {}).get("ingress") or []:
            peers = rule.get("from")
            peer_ok = not peers or any(
                _peer_allowed(peer, source, source_ns, str(namespace)) for peer in peers
            )
            if peer_ok and _port_allowed(rule.get("ports"), target, port):
                return True
    return False
