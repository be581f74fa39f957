"""What the operator costs, measured from outside it.

API requests come from the API server's own /metrics. `apiserver_request_total`
has no user or user-agent label (Kubernetes 1.34: code, component, dry_run,
group, resource, scope, subresource, verb, version), but API Priority and
Fairness classifies every request by who sent it: the script adds a
FlowSchema that matches only the operator's ServiceAccount (at the priority
level the built-in `service-accounts` schema would give it), so
`apiserver_flowcontrol_dispatched_requests_total{flow_schema=...}` counts the
operator's requests and nothing else's.

CPU and memory come from /proc of the operator's process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

FLOW_SCHEMA = "dbbench-operator-scale"
DISPATCHED = "apiserver_flowcontrol_dispatched_requests_total"
REQUESTS = "apiserver_request_total"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def flow_schema(namespace: str, service_account: str) -> dict[str, Any]:
    """A FlowSchema for exactly one ServiceAccount, at the built-in `workload-low` level."""
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": FLOW_SCHEMA},
        "spec": {
            "matchingPrecedence": 500,
            "priorityLevelConfiguration": {"name": "workload-low"},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "ServiceAccount", "serviceAccount": {
                    "name": service_account, "namespace": namespace}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "clusterScope": True, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            }],
        },
    }  # fmt: skip


def counter_sum(text: str, name: str, labels: Mapping[str, str] | None = None) -> float:
    """The sum of counter `name`'s samples whose labels include `labels`."""
    wanted = dict(labels or {})
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name != name:
                continue
            if all(sample.labels.get(k) == v for k, v in wanted.items()):
                total += sample.value
    return total


@dataclass(frozen=True)
class ProcessSample:
    cpu_seconds: float  # user + system, with reaped children (helm)
    rss_bytes: int


def process_sample(pid: int, proc: Path = Path("/proc")) -> ProcessSample:
    fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    # After the command: state is field 3, utime..cstime are fields 14-17 (1-based).
    ticks = sum(int(fields[i]) for i in range(11, 15))
    rss = 0
    for line in (proc / str(pid) / "status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return ProcessSample(ticks / CLOCK_TICKS, rss)


@dataclass(frozen=True)
class Window:
    """The operator's cost over one measured interval."""

    seconds: float
    cpu_cores: float
    rss_mb: float
    requests_per_s: float
    all_requests_per_s: float

    def per_run_per_minute(self, runs: int) -> float:
        return self.requests_per_s * 60 / runs if runs else 0.0


def window(
    before: tuple[float, ProcessSample, str],
    after: tuple[float, ProcessSample, str],
) -> Window:
    """(monotonic time, process sample, API server /metrics text) at both ends."""
    (t0, p0, m0), (t1, p1, m1) = before, after
    seconds = max(t1 - t0, 1e-9)
    mine = {"flow_schema": FLOW_SCHEMA}
    operator = counter_sum(m1, DISPATCHED, mine) - counter_sum(m0, DISPATCHED, mine)
    everyone = counter_sum(m1, REQUESTS) - counter_sum(m0, REQUESTS)
    return Window(
        seconds=seconds,
        cpu_cores=(p1.cpu_seconds - p0.cpu_seconds) / seconds,
        rss_mb=p1.rss_bytes / 2**20,
        requests_per_s=operator / seconds,
        all_requests_per_s=everyone / seconds,
    )
