"""Per-target NetworkPolicies (pure builder): who may reach a run's databases.

Applied with the target (chart value networkPolicy.enabled, on by default),
owned by the run, in the run's namespace. Ingress to the target's pods is
allowed from the run's own runner pods, from the target's own members
(replication, config servers, mongos) and from the operator's pod (setup,
readiness checks); every other pod of the cluster is refused, on clusters
whose network plugin enforces NetworkPolicies. The kubelet's probes come from
the node and are not affected. The results service's policy is the chart's
(templates/networkpolicies.yaml).
"""

from __future__ import annotations

from typing import Any

from dbbench_operator.naming import RUN_UID_LABEL, RunRef, run_labels
from dbbench_operator.settings import OperatorPeer
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.request import TopologyRequest

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server


def build_database_policy(
    run: RunRef, request: TopologyRequest, operator: OperatorPeer
) -> dict[str, Any]:
    instance = {"app.kubernetes.io/instance": target_names.base_name(request)}
    runners = {RUN_UID_LABEL: run.uid, "app.kubernetes.io/component": "runner"}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": target_names.base_name(request),
            "namespace": run.namespace,
            "labels": {**target_names.common_labels(request),
                       **run_labels(run, "network-policy")} | instance,
        },
        "spec": {
            "podSelector": {"matchLabels": instance},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [
                {"podSelector": {"matchLabels": runners}},
                {"podSelector": {"matchLabels": instance}},
                {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: operator.namespace}},
                 "podSelector": {"matchLabels": dict(operator.labels)}},
            ]}],
        },
    }  # fmt: skip
