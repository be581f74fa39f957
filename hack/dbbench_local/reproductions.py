"""`make reproduce`'s table (pure): the figures of the field benchmarks' small
variants (examples/field/*-small.yaml) as run on the local node, one section per
benchmark and run, then what each comparison of the original shows here
(reproduction_findings). Its input is each run's fetched results, read by the
report's own reader (dbbench_report.reading.Run: the run's summary.json and
every step's merged summary.json, environment.json and series); the runs
themselves are hack/reproduce.py's. docs/reproductions.md quotes its output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbbench_local.reproduction_findings import findings
from dbbench_report.figures import cost_per_million, database_pods, price_per_hour, restarted
from dbbench_report.reading import Run, Step

# Field benchmark 2's small variant is the only one with a MongoDB target that
# is no stand-in: it names the sharded topology, which FerretDB cannot be.
NO_MONGOD = (
    "no mongod or mongos runs on this machine (FerretDB, the node's MongoDB-protocol "
    "stand-in, is standalone: no replica set, no shards)"
)


@dataclass(frozen=True)
class Variant:
    """One small variant: its benchmark (the file name's leading number), file,
    run name, whether it holds the node alone, and why it cannot run here."""

    benchmark: int
    file: str
    name: str
    exclusive: bool
    not_here: str | None = None


def not_here(spec: Mapping[str, Any]) -> str | None:
    """Why a spec cannot run on this machine, or None: a MongoDB target that is not
    the protocol stand-in needs a real mongod (and mongos when sharded)."""
    for target in spec.get("targets") or []:
        if target.get("engine") == "mongodb" and not target.get("protocolStandIn"):
            return f"target {target.get('name')} is MongoDB: {NO_MONGOD}"
    return None


def variant(file_name: str, body: Mapping[str, Any]) -> Variant:
    """A manifest (`file_name` under examples/field/, `body` its parsed YAML)."""
    spec = body["spec"]
    return Variant(
        benchmark=int(file_name.split("-", 1)[0]),
        file=file_name,
        name=str(body["metadata"]["name"]),
        exclusive=bool((spec.get("hardware") or {}).get("exclusive", True)),
        not_here=not_here(spec),
    )


@dataclass(frozen=True)
class Outcome:
    """A variant and what became of it: its fetched run, and/or why there are no
    (or only some) figures: not runnable here, timed out, failed."""

    variant: Variant
    run: Run | None = None
    problem: str | None = None


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f}"


def _windows(step: Step) -> str:
    """The lowest and highest per-window rate of the step (an insert phase's
    records/s, else ops/s): the stability figure's extent."""
    counted = step.type == "insert" and step.summary.records > 0
    rates = [w.records_rate if counted and w.records_rate is not None else w.rate
             for w in step.windows]  # fmt: skip
    return "-" if not rates else f"{min(rates):,.0f}-{max(rates):,.0f}"


def _groups(step: Step) -> str:
    by_type = step.summary.operations_by_type
    parts = []
    for kind, connections in step.summary.connection_groups.items():
        figures = by_type.get(kind)
        if figures is None:
            parts.append(f"{kind} x{connections}: none")
        else:
            parts.append(f"{kind} x{connections}: {figures.throughput:,.1f}/s "
                         f"p99 {figures.latency_ms.p99:,.2f}")  # fmt: skip
    return "; ".join(parts) or "-"


def _client(step: Step) -> str:
    """The runner's own CPU per operation, and "bound" when the runner pods used 80%
    or more of their CPU budget: then the figure measures the load generator too."""
    summary = step.summary
    if summary.client_bound is None:
        return "-"
    per_op = "" if summary.client_cpu_per_op_us is None else f"{summary.client_cpu_per_op_us:,.0f}"
    return ("bound" if summary.client_bound else "not bound") + (f", {per_op}" if per_op else "")


def _restart(seen: bool | None) -> str:
    return {True: "yes", False: "no", None: "-"}[seen]


Column = tuple[str, Callable[[int, Step], str]]


def _columns(run: Run) -> list[Column]:
    """The columns of a run's table: the common ones, then those its spec calls for
    (stability windows for inserts, restarts for cold runs, groups, cost)."""
    restarts = restarted(run)

    def storage(step: Step) -> Any:
        return step.summary.storage

    def cost(_: int, step: Step) -> str:
        target = next((t for t in run.targets if t.name == step.target), None)
        price = price_per_hour(run, step.target)
        if price is None:
            return "-"
        per_million = cost_per_million(price, database_pods(target), step.summary.throughput)
        return _num(per_million, 4)

    columns: list[Column] = [
        ("target", lambda _, s: s.target),
        ("phase", lambda _, s: s.phase),
        ("repeat", lambda _, s: str(s.repeat)),
        ("operations", lambda _, s: f"{s.summary.operations:,}"),
        ("errors", lambda _, s: f"{s.summary.errors:,}"),
        ("ops/s", lambda _, s: _num(s.summary.throughput)),
        ("records/s", lambda _, s: _num(s.summary.records_per_second) if s.summary.records
         else "-"),
        ("p50 ms", lambda _, s: _num(s.summary.latency_ms.p50, 2)),
        ("p99 ms", lambda _, s: _num(s.summary.latency_ms.p99, 2)),
        ("disk reads/op", lambda _, s: "-" if s.summary.server_counters is None
         else _num(s.summary.server_counters.disk_reads_per_operation, 3)),
        ("data+index MB", lambda _, s: "-" if storage(s) is None
         else _mb(storage(s).data_bytes + storage(s).index_bytes)),
        ("on disk MB", lambda _, s: "-" if storage(s) is None else _mb(storage(s).storage_bytes)),
    ]  # fmt: skip
    if any(s.summary.client_bound is not None for s in run.steps):
        columns.append(("runner (CPU us/op)", lambda _, s: _client(s)))
    if any(s.type == "insert" and s.windows for s in run.steps):
        columns.append(("window rate min-max", lambda _, s: _windows(s)))
    if run.spec.cache != "warm":
        columns.append(("restarted before", lambda i, _: _restart(restarts.get(i))))
    if any(s.summary.connection_groups for s in run.steps):
        columns.append(("groups (connections: ops/s, p99 ms)", lambda _, s: _groups(s)))
    if any(price_per_hour(run, t) is not None for t in run.target_names()):
        columns.append(("price per M ops", cost))
    return columns


def _markdown(rows: Sequence[Sequence[str]]) -> list[str]:
    head, *body = rows
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |"
                    for row in body]  # fmt: skip


def run_table(run: Run) -> list[str]:
    """One markdown table: a row per step of the run (target, phase, repeat)."""
    columns = _columns(run)
    rows = [[name for name, _ in columns]]
    rows += [[cell(index, step) for _, cell in columns] for index, step in enumerate(run.steps)]
    return _markdown(rows)


def _state(outcome: Outcome) -> str:
    run = outcome.run
    if run is None:
        return f"not run: {outcome.problem or 'no results'}"
    meta = run.meta
    state = f"{meta.phase or '?'}, {meta.started_at or '?'} .. {meta.completed_at or '?'}"
    if meta.phase != "Succeeded":
        state += f" ({meta.reason or 'no reason'}: {meta.message or 'no message'})"
    return state + (f"; {outcome.problem}" if outcome.problem else "")


def run_section(outcome: Outcome) -> list[str]:
    """A run's heading, its servers and its table (or why it has none)."""
    v = outcome.variant
    lines = [f"### `{v.file}` (run `{v.name}`)", "", _state(outcome), ""]
    run = outcome.run
    if run is None:
        return lines
    servers = [f"{t.name}: {t.server_version}" for t in run.summary.targets if t.server_version]
    if servers:
        lines += ["Servers: " + "; ".join(servers) + ".", ""]
    if run.missing:
        lines += [f"Steps without results (the run ended before them): {', '.join(run.missing)}.",
                  ""]  # fmt: skip
    if not run.steps:
        return lines
    return [*lines, *run_table(run), ""]


def table(outcomes: Sequence[Outcome], machine: str, when: str) -> str:
    """The whole markdown document: a section per benchmark, each run's table, then
    the original's comparisons as measured here."""
    lines = [
        "# Field benchmarks: the small variants on the local node",
        "",
        f"Measured {when} on {machine}, one run after another (`make reproduce`).",
        "Rates are per second; latencies in milliseconds; MB are 10^6 bytes.",
        "",
    ]
    for benchmark in sorted({o.variant.benchmark for o in outcomes}):
        mine = [o for o in outcomes if o.variant.benchmark == benchmark]
        lines += [f"## Benchmark {benchmark}", ""]
        for outcome in mine:
            lines += run_section(outcome)
        runs = {o.variant.file: o.run for o in mine if o.run is not None}
        found = findings(benchmark, runs)
        if found:
            lines += ["Findings of the original, as measured here:", "", *found, ""]
    return "\n".join(lines).rstrip() + "\n"
