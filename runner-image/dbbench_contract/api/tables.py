"""Which table (collection) each phase writes and reads, and whether an earlier
phase of the run filled it: pure functions of the spec.

The runner keeps records of the two key modes apart: client-made keys in
`<table>`, server-made keys in `<table>_serverkey` (`dbbench_runner.datasets`,
whose names a test compares with these). A phase reads and writes the table
of its own `idMode`; the data set's shape names the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .phases import Phase
from .spec import BenchmarkRunSpec, Dataset
from .targets import Target

# The runner's suffix of the server-keyed table (dbbench_runner.datasets.SERVER_KEY_SUFFIX).
SERVER_KEY_SUFFIX = "_serverkey"


def keyed_table(dataset: Dataset, id_mode: str) -> str:
    """The table (collection) records of `id_mode` live in, for this data set."""
    table = dataset.collection
    return table if id_mode == "client" else f"{table}{SERVER_KEY_SUFFIX}"


def phase_table(dataset: Dataset, phase: Phase) -> str:
    return keyed_table(dataset, phase.id_mode)


def reads_records(phase: Phase) -> bool:
    """The phase needs records already in its table: point reads, queries, and a
    mix with any read, update, read-modify-write or scan share (an insert-only
    mix writes new keys past the data set and reads nothing)."""
    if phase.type in ("pointReads", "query"):
        return True
    if phase.type == "mix" and phase.mix is not None:
        mix = phase.mix
        return mix.read + mix.update + mix.read_modify_write + mix.scan > 0
    return False


def loads(phase: Phase) -> bool:
    """Only an insert phase fills a table from record 1: a mix's inserts are
    numbered past the data set, so they never make its keys 1..records exist."""
    return phase.type == "insert"


def used_tables(spec: BenchmarkRunSpec) -> tuple[str, ...]:
    """Every table the run's phases write or read, in phase order, once each: what
    a sharded MongoDB target shards before the first step."""
    tables = (phase_table(spec.dataset, p) for p in spec.phases)
    return tuple(dict.fromkeys(tables))


@dataclass(frozen=True)
class UnfilledRead:
    """A reading phase whose table no earlier phase of the run fills."""

    index: int
    phase: Phase
    table: str
    loaded_before: tuple[str, ...]  # tables earlier insert phases did fill
    loaded_later: str | None  # the first later insert phase of the same table
    targets: tuple[str, ...]  # the targets whose table is empty when it runs


def _empty_targets(spec: BenchmarkRunSpec) -> tuple[Target, ...]:
    """The targets whose tables are empty until the run loads them.

    A deployed target starts as a fresh database. An external one may hold
    data from before; nothing in the spec says so, and the operator cannot see
    it. A run with no insert phase at all against it reads what is there (the
    runner assumes `dataset.records` records of the run's shape and seed, as
    an earlier run's load wrote them); a run that loads anything builds its own
    data and must read what it loaded, as on a deployed target.
    """
    if any(loads(p) for p in spec.phases):
        return tuple(spec.targets)
    return tuple(t for t in spec.targets if t.external is None)


def unfilled_reads(spec: BenchmarkRunSpec) -> list[UnfilledRead]:
    """Each reading phase that would read a table no earlier phase of the run filled."""
    empty = tuple(t.name for t in _empty_targets(spec))
    if not empty:
        return []
    found: list[UnfilledRead] = []
    phases: Sequence[Phase] = spec.phases
    for i, phase in enumerate(phases):
        if not reads_records(phase):
            continue
        table = phase_table(spec.dataset, phase)
        earlier = [phase_table(spec.dataset, p) for p in phases[:i] if loads(p)]
        if table in earlier:
            continue
        later = next(
            (p.name for p in phases[i + 1 :] if loads(p) and p.id_mode == phase.id_mode), None
        )
        found.append(UnfilledRead(i, phase, table, tuple(dict.fromkeys(earlier)), later, empty))
    return found
