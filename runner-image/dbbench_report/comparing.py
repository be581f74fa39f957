"""Several runs in one table (pure): throughput and p99 per target and workload,
the relative difference to the first run, and whether the repeats say it is noise.

Steps line up by what they did, never by what their phases are called. A
workload is everything that shapes the load a step put on its target
(docs/results.md, "dbbench compare"):

- the phase: type, idMode, batch size (insert), write concern, keys,
  operations, duration, warm-up, target rate, read preference, queries, mix,
  distribution;
- the runner: pods and connections per pod (the phase's `threads`, else
  `runner.threads`);
- the data set: shape, records, record size, seed, tags index.

Durations are compared in seconds (`60s` is `1m`), and a field given at what
its absence means is as absent (`warmup: 0s`, `distribution: {type: uniform}`,
`targetRate: 0`, `readPreference: primary`; `tagsIndex` but for news), so
only what the steps did decides. Field benchmark 1 names its load `load-client-key` in one
run and `load-server-key` in the other; both are "insert, batch 1" over the
same data set, and the modes table under the main one ranks every (run,
target, idMode) of such a workload together. Two runs whose phases differ in
any of these (1 or 8 threads, another warm-up, another data set) show as two
rows, each with the run that did it: never as one row with a difference.

A difference is flagged "noise" when both runs repeated the phase and the
ranges of their repeats' throughput (min..max) overlap: the runs disagree less
than one run disagrees with itself. With a single repeat on either side there
is nothing to judge by ("1 repeat").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dbbench_contract.api import BenchmarkRunSpec, Phase
from dbbench_report.figures import Spread, latency, throughput
from dbbench_report.reading import Run

# Phase fields that say what a step did, beyond type and idMode (names as in the spec).
_DETAIL_FIELDS = (
    "batchSize", "writeConcern", "keys", "operations", "duration", "warmup", "targetRate",
    "readPreference", "queries", "mix", "distribution",
)  # fmt: skip
# Phase fields given at what their absence means: left out, as if absent.
_DEFAULTS = {"warmup": "0s", "distribution": "type:uniform", "targetRate": "0",
             "readPreference": "primary"}  # fmt: skip
_QUERIES = ("indexedEquality", "twoFieldProjection", "sortSkip", "scan100")
# The data set's fields that change what a step reads and writes (spec.dataset).
_DATASET_FIELDS = ("shape", "records", "recordSize", "seed", "tagsIndex")
Items = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Workload:
    """What a phase did: its type, idMode, the parameters that shape its load
    (`detail`) and the run's that do too (`context`: pods, threads, data set)."""

    type: str
    id_mode: str
    detail: Items
    context: Items = ()

    @classmethod
    def of(cls, phase: Phase, spec: BenchmarkRunSpec) -> Workload:
        kind = phase.type
        # The phase as its manifest writes it, unset fields left out.
        values = phase.model_dump(by_alias=True, exclude_none=True, mode="json")
        if kind == "query":
            values.setdefault("queries", list(_QUERIES))
        # Durations as seconds (`1m` and `60s` are one duration).
        durations = {"duration": phase.duration, "warmup": phase.warmup}
        shown = {
            key: _show(values[key]) if (d := durations.get(key)) is None else f"{d.seconds:g}s"
            for key in _DETAIL_FIELDS
            if key in values and not (key == "batchSize" and kind != "insert")
        }
        detail = tuple((k, v) for k, v in shown.items() if _DEFAULTS.get(k) != v)
        return cls(kind, phase.id_mode, detail, _context(phase, spec))

    @property
    def family(self) -> tuple[str, Items, Items]:
        """The workload without its idMode: insert modes of one family compare directly."""
        return self.type, self.detail, self.context

    def items(self) -> Items:
        """Every part of the identity, named: what `differences` compares."""
        return (("type", self.type), ("idMode", self.id_mode), *self.detail, *self.context)

    def label(self, with_id_mode: bool = True) -> str:
        parts = [self.type, *(f"{k}={v}" for k, v in (*self.detail, *self.context))]
        if with_id_mode:
            parts.insert(1, f"idMode={self.id_mode}")
        return " ".join(parts)


def _context(phase: Phase, spec: BenchmarkRunSpec) -> Items:
    threads = phase.threads or spec.runner.threads
    parts: list[tuple[str, object]] = [("pods", spec.runner.pods), ("threads", threads)]
    dataset = spec.dataset.model_dump(by_alias=True, exclude_none=True, mode="json")
    shown = {k: dataset[k] for k in _DATASET_FIELDS if k in dataset}
    if spec.dataset.shape != "news":
        shown.pop("tagsIndex", None)  # only news has Tags: the flag changes nothing else
    parts.append(("dataset", shown))
    return tuple((key, _show(value)) for key, value in parts)


def _show(value: object) -> str:
    if isinstance(value, Mapping):
        return ",".join(f"{k}:{_show(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return "+".join(_show(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class Cell:
    phase: str
    throughput: Spread
    p99: Spread


@dataclass(frozen=True)
class Row:
    target: str
    workload: Workload
    cells: tuple[Cell | None, ...]  # one per run; None when that run lacks the step

    @property
    def phase(self) -> str:
        """The phase's name, or its names when the runs call it differently."""
        names = list(dict.fromkeys(c.phase for c in self.cells if c is not None))
        return "|".join(names)

    def relative(self, index: int, figure: str = "throughput") -> float | None:
        """(run[index] - run[0]) / run[0], in percent, of the mean over repeats."""
        base, other = self.cells[0], self.cells[index]
        if base is None or other is None:
            return None
        a, b = getattr(base, figure).mean, getattr(other, figure).mean
        return None if a == 0 else (b - a) / a * 100.0

    def noise(self, index: int) -> str:
        base, other = self.cells[0], self.cells[index]
        if base is None or other is None:
            return "missing"
        x, y = base.throughput, other.throughput
        if x.n < 2 or y.n < 2:
            return "1 repeat"
        overlap = x.low <= y.high and y.low <= x.high
        return "noise" if overlap else "significant"


Key = tuple[str, Workload, int]


def _steps_by_workload(run: Run) -> dict[Key, str]:
    """(target, workload, occurrence) -> phase name; occurrence tells apart two
    phases of one run that did the same thing (in spec order)."""
    found: dict[Key, str] = {}
    for target in run.target_names():
        seen: dict[Workload, int] = {}
        for phase in run.phases:
            name = phase.name
            if not run.steps_of(target, name):
                continue
            workload = Workload.of(phase, run.spec)
            seen[workload] = seen.get(workload, 0) + 1
            found[(target, workload, seen[workload])] = name
    return found


def compare(runs: Sequence[Run]) -> list[Row]:
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    per_run = [_steps_by_workload(run) for run in runs]
    keys = list(dict.fromkeys(key for steps in per_run for key in steps))
    rows = []
    for key in keys:
        target = key[0]
        cells = tuple(
            None
            if key not in steps
            else Cell(
                steps[key],
                throughput(run, target, steps[key]),
                latency(run, target, steps[key], "p99"),
            )
            for run, steps in zip(runs, per_run, strict=True)
        )
        rows.append(Row(target, key[1], cells))
    return rows


def differences(rows: Sequence[Row]) -> list[str]:
    """Per row, what tells its workload apart from the other rows of its target
    shown under the same phase name (`threads=1`, `threads=8`): "" when no other."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in rows:
        groups.setdefault((row.target, row.phase), []).append(dict(row.workload.items()))
    out = []
    for row in rows:
        group = groups[(row.target, row.phase)]
        if len(group) < 2:
            out.append("")
            continue
        mine = dict(row.workload.items())
        keys = dict.fromkeys(k for items in group for k in items)
        differ = [k for k in keys if len({items.get(k, "-") for items in group}) > 1]
        out.append(" ".join(f"{k}={mine.get(k, '-')}" for k in differ))
    return out


@dataclass(frozen=True)
class Entry:
    """One (run, target, idMode) of a workload family, for the modes table."""

    label: str
    phase: str
    id_mode: str
    throughput: float
    p99: float


def modes(runs: Sequence[Run], rows: Sequence[Row]) -> dict[str, list[Entry]]:
    """Families of workloads done with more than one idMode, each with every
    (run, target, idMode) that ran it, fastest first (field benchmark 1's ranking)."""
    names = labels(runs)
    families: dict[tuple[str, Items, Items], list[Entry]] = {}
    for row in rows:
        for name, cell in zip(names, row.cells, strict=True):
            if cell is None:
                continue
            families.setdefault(row.workload.family, []).append(Entry(
                f"{name} {row.target}", cell.phase, row.workload.id_mode,
                cell.throughput.mean, cell.p99.mean,
            ))  # fmt: skip
    out: dict[str, list[Entry]] = {}
    for (kind, detail, context), entries in families.items():
        if len({e.id_mode for e in entries}) < 2:
            continue
        title = Workload(kind, "", detail, context).label(with_id_mode=False)
        out[title] = sorted(entries, key=lambda e: -e.throughput)
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def _mean(cell: Cell | None, figure: str, digits: int) -> str:
    return "-" if cell is None else f"{getattr(cell, figure).mean:,.{digits}f}"


def labels(runs: Sequence[Run]) -> list[str]:
    names = [run.title for run in runs]
    return [f"{n}#{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _align(lines: list[list[str]], left: int) -> str:
    widths = [max(len(line[c]) for line in lines) for c in range(len(lines[0]))]
    return "\n".join(
        "  ".join(v.ljust(w) if c < left else v.rjust(w) for c, (v, w) in
                  enumerate(zip(line, widths, strict=True))).rstrip()
        for line in lines
    ) + "\n"  # fmt: skip


def table(runs: Sequence[Run], rows: Sequence[Row]) -> str:
    """Plain text: one line per target and workload, runs side by side; then, for
    workloads run with several idModes, every mode ranked."""
    names = labels(runs)
    header = ["TARGET", "PHASE"]
    for i, name in enumerate(names):
        header.append(f"{name} ops/s")
        if i:
            header.append("Δ ops/s")
        header.append(f"{name} p99 ms")
        if i:
            header += ["Δ p99", "repeats say"]
    lines = [header]
    for row, differs in zip(rows, differences(rows), strict=True):
        line = [row.target, f"{row.phase} [{differs}]" if differs else row.phase]
        for i, cell in enumerate(row.cells):
            line.append(_mean(cell, "throughput", 1))
            if i:
                line.append(_pct(row.relative(i)))
            line.append(_mean(cell, "p99", 3))
            if i:
                line += [_pct(row.relative(i, "p99")), row.noise(i)]
        lines.append(line)
    out = _align(lines, 2)
    for title, entries in modes(runs, rows).items():
        best = entries[0].throughput or 1.0
        ranked = [["RANK", "RUN TARGET", "PHASE", "IDMODE", "ops/s", "vs best", "p99 ms"]]
        ranked += [
            [str(i + 1), e.label, e.phase, e.id_mode, f"{e.throughput:,.1f}",
             f"{e.throughput / best:.2f}x", f"{e.p99:,.3f}"]
            for i, e in enumerate(entries)
        ]  # fmt: skip
        out += f"\nModes of {title}:\n" + _align(ranked, 4)
    return out
