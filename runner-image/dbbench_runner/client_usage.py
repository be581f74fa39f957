"""Is the runner what was measured? Its CPU use against the CPUs it may use.

Each worker process records its CPU time (all its threads) over the phase and
how long its connection threads were ready to run but waiting for a CPU
(/proc/thread-self/schedstat: neighbours on the node, or the pod's own threads
queueing). A pod is client-bound when (CPU + wait) reaches
CLIENT_BOUND_THRESHOLD of its CPU budget over the phase: its latencies then
include its own queueing, and its throughput is the runner's, not the
database's. Pure functions below the two readers; summary fields are listed in
docs/results.md.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbbench_contract.defaults import CLIENT_BOUND_THRESHOLD
from dbbench_contract.summary import ClientPod, StepSummary

__all__ = ["CLIENT_BOUND_THRESHOLD", "PodUsage", "pod_usage", "pods_from_summary", "summary_fields"]
THREAD_SCHEDSTAT = Path("/proc/thread-self/schedstat")


def thread_wait_seconds(path: Path = THREAD_SCHEDSTAT) -> float:
    """Seconds the calling thread has spent runnable on a run queue (0 when unknown)."""
    try:
        fields = path.read_text().split()
        return int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def process_cpu_seconds() -> float:
    """CPU (user + system) of this process, all threads."""
    return time.process_time()


@dataclass(frozen=True)
class ProcessUsage:
    cpu_seconds: float
    wait_seconds: float
    wall_seconds: float


@dataclass(frozen=True)
class PodUsage:
    pod: int
    cpus: float
    cpu_seconds: float
    wait_seconds: float
    wall_seconds: float
    operations: int  # warm-up included: the CPU was spent on them too

    @property
    def capacity(self) -> float:
        """CPU seconds the pod could have used over the phase."""
        return max(self.cpus * self.wall_seconds, 1e-9)

    @property
    def utilization(self) -> float:
        return self.cpu_seconds / self.capacity

    @property
    def demand(self) -> float:
        return (self.cpu_seconds + self.wait_seconds) / self.capacity

    @property
    def bound(self) -> bool:
        return self.demand >= CLIENT_BOUND_THRESHOLD

    def recorded(self) -> ClientPod:
        """As the summary records it."""
        return ClientPod(
            pod=self.pod,
            cpus=self.cpus,
            cpu_seconds=self.cpu_seconds,
            wait_seconds=self.wait_seconds,
            wall_seconds=self.wall_seconds,
            operations=self.operations,
            utilization=self.utilization,
            demand=self.demand,
            cpu_per_op_us=_per_op_us(self.cpu_seconds, self.operations),
            bound=self.bound,
        )

    @classmethod
    def from_recorded(cls, pod: ClientPod) -> PodUsage:
        return cls(
            pod=pod.pod,
            cpus=pod.cpus,
            cpu_seconds=pod.cpu_seconds,
            wait_seconds=pod.wait_seconds,
            wall_seconds=pod.wall_seconds,
            operations=pod.operations,
        )


def _per_op_us(cpu_seconds: float, operations: int) -> float | None:
    return cpu_seconds / operations * 1e6 if operations else None


def pod_usage(
    pod: int, cpus: float, processes: Iterable[ProcessUsage], parent_cpu: float, operations: int
) -> PodUsage:
    """One pod's usage from its worker processes (and the parent, which samples and watches)."""
    processes = list(processes)
    return PodUsage(
        pod=pod,
        cpus=cpus,
        cpu_seconds=parent_cpu + sum(p.cpu_seconds for p in processes),
        wait_seconds=sum(p.wait_seconds for p in processes),
        wall_seconds=max((p.wall_seconds for p in processes), default=0.0),
        operations=operations,
    )


def summary_fields(pods: list[PodUsage]) -> dict[str, Any]:
    """StepSummary's client fields (keyword arguments) over one or several (merged) pods."""
    cpu = sum(p.cpu_seconds for p in pods)
    capacity = sum(p.capacity for p in pods) if pods else 1e-9
    return {
        "client_cpu_seconds": cpu,
        "client_wait_seconds": sum(p.wait_seconds for p in pods),
        "client_cpus": sum(p.cpus for p in pods),
        "client_utilization": cpu / capacity,
        "client_demand": sum(p.cpu_seconds + p.wait_seconds for p in pods) / capacity,
        "client_cpu_per_op_us": _per_op_us(cpu, sum(p.operations for p in pods)),
        # Any pod: one saturated pod's operations are in the merged histograms.
        "client_bound": any(p.bound for p in pods),
        "client_bound_threshold": CLIENT_BOUND_THRESHOLD,
        "client_by_pod": tuple(p.recorded() for p in sorted(pods, key=lambda p: p.pod)),
    }


def pods_from_summary(summary: StepSummary) -> list[PodUsage]:
    """The pods' usage recorded in a summary (none in summaries from older runners)."""
    return [PodUsage.from_recorded(p) for p in summary.client_by_pod]
