"""The order a target's phases run in, and which records each run finds (pure).

Phases run in spec order, each non-insert phase `repeats` times, each insert
phase once. A phase with `growth` loads its records in `steps` parts instead,
and the phases it names in `measure` run after every part (their repeats
numbered on across the parts) rather than at their own place in the list.

Record numbers: the run's insert phases load one contiguous range per table,
each part continuing the last (`loaded + 1` on), from 1 when the run loads
the table from empty, or after the data set the run assumes is there
(records 1..dataset.records) when a step of the table runs before any load.
Reads draw keys from every record loaded so far: 1..`loaded`. Inserts of a
mix are numbered past `reserved`, the end of every load the plan has for the
table, so that a later load never collides with them and what reads draw
from stays contiguous.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .base import Problem
from .phases import Phase
from .spec import BenchmarkRunSpec
from .tables import phase_table


@dataclass(frozen=True)
class PhaseRun:
    """One run of a phase against a target (the operator's step, less the target)."""

    phase: Phase
    repeat: int  # 1-based; numbered on across a growth's parts
    # Records this run loads (insert runs; 0 otherwise).
    records: int = 0
    # 1.. for the parts of a growth and the phases measured after them; 0 otherwise.
    growth_step: int = 0
    table: str = ""
    # Records 1..loaded are in the table when the run starts: what reads draw
    # keys from, and where an insert run's numbers start after.
    loaded: int = 0
    # The highest record number any load of the table takes (mix inserts go past it).
    reserved: int = 0


def part(total: int, parts: int, index: int) -> int:
    """Records of part `index` (0-based) when `total` is loaded in `parts` parts."""
    return (index + 1) * total // parts - index * total // parts


def _ordered(spec: BenchmarkRunSpec) -> Iterator[tuple[Phase, int, int, int]]:
    """(phase, repeat, records loaded, growth step) in the order they run."""
    grown = next((p for p in spec.phases if p.growth is not None), None)
    measured = [] if grown is None or grown.growth is None else grown.growth.measure
    after = [p for p in spec.phases if p.name in measured]
    for phase in spec.phases:
        total = phase.operations or spec.dataset.records
        if phase.name in measured:
            continue  # runs after each part of the growth
        if phase.growth is not None:
            for index in range(phase.growth.steps):
                yield phase, index + 1, part(total, phase.growth.steps, index), index + 1
                for other in after:
                    for repeat in range(1, spec.repeats + 1):
                        yield other, index * spec.repeats + repeat, 0, index + 1
        elif phase.type == "insert":
            yield phase, 1, total, 0
        else:
            for repeat in range(1, spec.repeats + 1):
                yield phase, repeat, 0, 0


def phase_runs(spec: BenchmarkRunSpec) -> list[PhaseRun]:
    """Every run of the spec's phases against one target, in order (every target
    runs the same ones)."""
    ordered = list(_ordered(spec))
    tables = [phase_table(spec.dataset, phase) for phase, *_ in ordered]
    # The data set the run assumes is there, for tables a step reads before any load.
    base: dict[str, int] = {}
    for (phase, *_), table in zip(ordered, tables, strict=True):
        base.setdefault(table, 0 if phase.type == "insert" else spec.dataset.records)
    reserved = dict(base)
    for (_, _, records, _), table in zip(ordered, tables, strict=True):
        reserved[table] += records
    loaded = dict(base)
    runs = []
    for (phase, repeat, records, growth_step), table in zip(ordered, tables, strict=True):
        runs.append(PhaseRun(phase, repeat, records, growth_step, table, loaded[table],
                             reserved[table]))  # fmt: skip
        loaded[table] += records
    return runs


def growth_problems(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """What the CRD's rules cannot see of a growth: the order of the list, and
    parts of at least one record each."""
    names = [p.name for p in spec.phases]
    for index, phase in enumerate(spec.phases):
        if phase.growth is None:
            continue
        where = f"spec.phases[{index}].growth"
        before = [m for m in phase.growth.measure if m in names[:index]]
        if before:
            yield Problem(
                f"{where}.measure",
                f"{', '.join(before)} listed before {phase.name}: a measured phase reads what "
                f"the growth loaded, after each of its steps; list it after {phase.name}",
            )
        total = phase.operations or spec.dataset.records
        if phase.growth.steps > total:
            yield Problem(
                f"{where}.steps",
                f"{phase.growth.steps} steps of {total} records would leave steps with nothing "
                f"to load; use at most {total} steps",
            )


def keys_problems(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """pointReads of `keys` distinct keys need that many records in the table each
    time they run: after the first part of a growth, or a load of fewer records
    than dataset.records, there are fewer than the data set."""
    runs = phase_runs(spec)
    for index, phase in enumerate(spec.phases):
        if phase.keys is None:
            continue
        found = [run.loaded for run in runs if run.phase.name == phase.name]
        fewest = min(found, default=spec.dataset.records)
        if phase.keys > fewest:
            yield Problem(
                f"spec.phases[{index}].keys",
                f"keys {phase.keys} exceeds the {fewest} records its table holds when phase "
                f"{phase.name} runs (reads draw from what the run has loaded so far, else "
                "dataset.records): there are not that many distinct keys; lower keys",
            )
