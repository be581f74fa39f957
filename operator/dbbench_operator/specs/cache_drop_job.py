"""The privileged cache-drop Jobs of `cache: cold` and `coldOnce` (pure builder).

They run in the operator's own namespace, never the run's, so benchmark
namespaces can enforce Pod Security `baseline`; owner references cannot cross
namespaces, so the run's labels (uid first) are how its cleanup and its
deletion handler find them (`targets/teardown`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from dbbench_operator.naming import RUN_NAMESPACE_LABEL, RunRef, dns_label, label_value
from dbbench_operator.specs.plan import Step
from dbbench_operator.specs.runner_job import step_labels

# Cache-drop Jobs are short; finished ones go by themselves should every
# cleanup of their run be missed (the run's cleanup deletes them first).
CACHE_DROP_TTL_S = 3600


def cache_drop_labels(run: RunRef, step: Step) -> dict[str, str]:
    """Labels of a step's cache-drop Jobs: they live in the operator's namespace, where
    no owner reference to the run is allowed, so the run's uid label is how the run's
    cleanup (and the deletion handler) finds them."""
    return {**step_labels(run, step, "cache-drop"), RUN_NAMESPACE_LABEL: label_value(run.namespace)}


def build_cache_drop_job(
    run: RunRef, step: Step, node: str, image: str, namespace: str
) -> dict[str, Any]:
    """A short privileged pod on `node` that drops the page cache (cache: cold, coldOnce).

    Privileged because /proc/sys/vm/drop_caches is writable only so; allowed only
    when the chart value coldCache.allowPrivilegedPods is true, and only in the
    operator's own `namespace`, so benchmark namespaces can enforce Pod Security
    `baseline`. Named from the run's uid (unique in that shared namespace), not owned
    (owner references cannot cross namespaces): the run's cleanup deletes it.
    """
    labels = {**cache_drop_labels(run, step), "dbbench.io/node": label_value(node)}
    name = dns_label(f"dbbench-drop-{run.uid}-{step.index + 1}-{_short_hash(node)}")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name, "namespace": namespace, "labels": labels,
            "annotations": {"dbbench.io/run": f"{run.namespace}/{run.name}"},
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 300,
            "ttlSecondsAfterFinished": CACHE_DROP_TTL_S,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeName": node,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{
                        "name": "drop-caches",
                        "image": image,
                        "command": ["/bin/sh", "-c",
                                    "sync && echo 3 > /proc/sys/vm/drop_caches && echo dropped"],
                        "securityContext": {"privileged": True, "runAsUser": 0,
                                            "runAsNonRoot": False},
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                      "limits": {"memory": "64Mi"}},
                    }],
                },
            },
        },
    }  # fmt: skip


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]
