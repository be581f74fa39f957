"""What the watches have shown of the runs and the nodes, kept in memory for
admission (`controller/admission`), so that a waiting run's pass lists nothing.

Fed by kopf's watches (the BenchmarkRun watch and a Node watch, on kopf's
event loop) and read by passes (worker threads): one lock. Each half is
complete only once it has been filled from one list of the API (`fill_runs`,
`fill_nodes`, done by the first pass that needs it): a watch shows the
objects one by one as it starts, and admission must not miss a holder that
the watch has not shown yet. Objects the watch showed before that list are
kept as the watch showed them (newer), and objects it showed deleted stay
deleted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunEntry:
    """What admission needs of a run."""

    uid: str
    namespace: str
    name: str
    generation: int  # of the spec that `exclusive` and `pools` were read from
    phase: str
    cleaned_up: bool
    exclusive: bool
    # The nodeSelectors of its pools; None when its spec is invalid (it deploys nothing).
    pools: tuple[Mapping[str, str], ...] | None


@dataclass(frozen=True)
class NodeEntry:
    """A node's name, labels and allocatable resources (what pools and fitting read)."""

    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, str]

    def as_object(self) -> dict[str, Any]:
        """The node in the API's shape, as `specs/node_fit` reads one."""
        return {
            "metadata": {"name": self.name, "labels": dict(self.labels)},
            "status": {"allocatable": dict(self.allocatable)},
        }

    def matches(self, selector: Mapping[str, str] | None) -> bool:
        return all(self.labels.get(k) == v for k, v in (selector or {}).items())


class Inventory:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, RunEntry] = {}
        self._nodes: dict[str, NodeEntry] = {}
        self._runs_listed: float | None = None  # monotonic time of the last list
        self._nodes_listed: float | None = None

    def run_seen(self, entry: RunEntry, *, deleted: bool = False) -> None:
        with self._lock:
            if deleted:
                self._runs.pop(entry.uid, None)
            else:
                self._runs[entry.uid] = entry

    def run(self, uid: str) -> RunEntry | None:
        with self._lock:
            return self._runs.get(uid)

    def node_seen(self, entry: NodeEntry, *, deleted: bool = False) -> bool:
        """True when what admission reads of the node changed (its labels, capacity, or
        the node came or went)."""
        with self._lock:
            if deleted:
                return self._nodes.pop(entry.name, None) is not None
            changed = self._nodes.get(entry.name) != entry
            self._nodes[entry.name] = entry
            return changed

    def runs(self, max_age: float) -> list[RunEntry] | None:
        """Every run; None when the last list is older than `max_age` seconds (or none
        was made): the caller lists them (`fill_runs`)."""
        with self._lock:
            if not _fresh(self._runs_listed, max_age):
                return None
            return list(self._runs.values())

    def nodes(self, max_age: float) -> list[NodeEntry] | None:
        """Every node; None when the last list is older than `max_age` seconds."""
        with self._lock:
            if not _fresh(self._nodes_listed, max_age):
                return None
            return list(self._nodes.values())

    def fill_runs(self, listed: Iterable[RunEntry]) -> None:
        """The runs as one list shows them (a watch that restarted shows no deletion
        it missed: the list is the safety net)."""
        with self._lock:
            self._runs = {entry.uid: entry for entry in listed}
            self._runs_listed = time.monotonic()

    def fill_nodes(self, listed: Iterable[NodeEntry]) -> None:
        with self._lock:
            self._nodes = {entry.name: entry for entry in listed}
            self._nodes_listed = time.monotonic()

    def clear(self) -> None:
        """Forget everything: the watches show it all again when they (re)start."""
        with self._lock:
            self._runs, self._nodes = {}, {}
            self._runs_listed = self._nodes_listed = None


def _fresh(listed: float | None, max_age: float) -> bool:
    return listed is not None and time.monotonic() - listed <= max_age


INVENTORY = Inventory()
