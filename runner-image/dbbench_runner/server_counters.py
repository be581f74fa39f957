"""Disk reads per operation: the engine's own counter around the measured part.

Each pod samples the server's disk-read counter (drivers' `disk_reads`:
InnoDB `Innodb_buffer_pool_reads`, WiredTiger "pages read into cache",
PostgreSQL `blks_read`) when its measured part starts and after its last
operation. The counter is server-wide: during one pod's window it counts the
reads of every pod of the step (and of the server's own background work).
Summing the pods' differences would count the same reads once per pod, so a
summary keeps the raw samples and computes its figure over the union of its
pods' windows, from the earliest first sample to the latest last one; the
figure per operation is given only when the summary covers every pod of the
step (the merged one), divided by all their measured operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbbench_contract.summary import ServerCounters, StepSummary
from dbbench_runner.drivers.base import CounterSample


@dataclass(frozen=True)
class CounterWindow:
    """One pod's samples of a counter: at its measured start and after its end."""

    name: str
    before: int
    after: int


def window(before: CounterSample | None, after: CounterSample | None) -> CounterWindow | None:
    """The pod's window, or None when a sample is missing or the counter went
    back (the server restarted in between: the difference would mean nothing)."""
    if before is None or after is None or before.name != after.name:
        return None
    if after.value < before.value:
        return None
    return CounterWindow(before.name, before.value, after.value)


def counters_block(
    windows: Sequence[CounterWindow | None], operations: int, all_pods: bool
) -> ServerCounters | None:
    """The summary's `serverCounters` over the union of the windows (None when
    any pod has no window: a partial figure would read as the whole)."""
    known = [w for w in windows if w is not None]
    if not known or len(known) != len(windows) or len({w.name for w in known}) != 1:
        return None
    before = min(w.before for w in known)
    after = max(w.after for w in known)
    reads = after - before
    return ServerCounters(
        disk_reads_counter=known[0].name,
        disk_reads_before=before,
        disk_reads_after=after,
        disk_reads=reads,
        disk_reads_per_operation=reads / operations if all_pods and operations else None,
    )


def windows_of(summary: StepSummary) -> list[CounterWindow | None]:
    """A (pod's or merged) summary's samples, as one window."""
    block = summary.server_counters
    if block is None:
        return [None]
    return [
        CounterWindow(block.disk_reads_counter, block.disk_reads_before, block.disk_reads_after)
    ]
