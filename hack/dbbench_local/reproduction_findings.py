"""What each field benchmark's original found, as the small variants measured it
on the local node (pure): one markdown bullet per comparison, with our figures
and whether they point the way the original's did. The originals' own figures
and why a finding can differ here are in docs/reproductions.md; this module
only compares numbers of runs that ran (by their examples/field/ file name).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

from dbbench_report.reading import Run, Step

# Within this much of each other two rates are "about equal": the small runs'
# repeat-to-repeat spread on the shared 2-core node is of that order.
TIE = 0.05

Runs = Mapping[str, Run]


def direction(ratio: float | None, original_above_one: bool) -> str:
    """Whether `ratio` (ours, a/b) points the way the original's a/b did."""
    if ratio is None:
        return "not measured"
    if abs(ratio - 1.0) < TIE:
        return f"about equal here (within {TIE:.0%}): does not show the original's difference"
    same = (ratio > 1.0) == original_above_one
    return "points the same way as the original" if same else "points the other way"


def trend(rates: list[float | None]) -> str:
    """Whether repeats rose run over run (the original's warming caches): only a
    rise at every repeat counts; a rate that goes up and down shows no trend."""
    if any(r is None for r in rates):
        return "not measured"
    pairs = list(itertools.pairwise(rates))
    if all(a is not None and b is not None and b > a for a, b in pairs):
        return "rising at every repeat: points the same way as the original"
    if all(a is not None and b is not None and b < a for a, b in pairs):
        return "falling at every repeat: points the other way"
    return "up and down, no steady trend: does not show the original's rise"


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


def _step(run: Run | None, phase: str, repeat: int = 1, target: str | None = None) -> Step | None:
    if run is None:
        return None
    return next((s for s in run.steps_of(target, phase) if s.repeat == repeat), None)


def _rate(step: Step | None) -> float | None:
    """Records/s of a step that wrote records, else ops/s."""
    if step is None:
        return None
    return step.summary.records_per_second if step.summary.records else step.summary.throughput


def _type_rate(step: Step | None, kind: str) -> float | None:
    figures = None if step is None else step.summary.operations_by_type.get(kind)
    return None if figures is None else figures.throughput


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _per_thousand(rate: float | None) -> str:
    return "-" if not rate else f"{1000.0 / rate:,.3f} s per 1,000"


def benchmark_1(runs: Runs) -> list[str]:
    c = _step(runs.get("1-insert-modes-client-key-small.yaml"), "load-client-key")
    d = _step(runs.get("1-insert-modes-server-key-small.yaml"), "load-server-key")
    rc, rd = _rate(c), _rate(d)
    ratio = _ratio(rd, rc)
    lines = [
        f"- Insert modes (c) and (d) on MySQL, one connection, one record per insert: "
        f"(c) md5 PRIMARY KEY {_f(rc)} records/s ({_per_thousand(rc)}), "
        f"(d) no primary key {_f(rd)} records/s ({_per_thousand(rd)}), (d)/(c) = {_f(ratio, 2)}. "
        f"The original ranks (d) above (c): {direction(ratio, True)}. "
        "Modes (a) and (b) are MongoDB's: not run here.",
    ]
    client = runs.get("1-insert-modes-client-key-small.yaml")
    phases = {} if client is None else {p.name: p for p in client.phases}
    for step in [] if client is None else client.steps:
        if step.type == "pointReads":
            keys = phases[step.phase].keys
            lines.append(
                f"- Point reads by md5 key on (c), {step.phase} ({_f(keys, 0)} distinct keys): "
                f"{_f(step.summary.throughput)} reads/s, {_per_thousand(step.summary.throughput)}."
            )
    return lines


def benchmark_3(runs: Runs) -> list[str]:
    lines = []
    whole: dict[str, float | None] = {}
    for cache, file in (("cold", "3-cold-cache-small.yaml"), ("warm", "3-warm-cache-small.yaml")):
        run = runs.get(file)
        hot, all_ = _step(run, "reads-hot-range"), _step(run, "reads-whole-range")
        whole[cache] = _rate(all_)
        if run is None or hot is None or all_ is None:
            continue

        def reads(step: Step) -> str:
            counters = step.summary.server_counters
            per_op = None if counters is None else counters.disk_reads_per_operation
            rate = _f(step.summary.throughput)
            return f"{rate} reads/s, {_f(per_op, 3)} pages read from storage per read"

        env = all_.environment
        lines.append(
            f"- {cache}: hot 10% {reads(hot)}; whole range {reads(all_)} (data+index / "
            f"buffer pool {_f(env.data_to_cache_ratio, 2)}, / pod memory "
            f"{_f(env.data_to_memory_ratio, 2)})."
        )
        hot_pages = hot.summary.server_counters
        all_pages = all_.summary.server_counters
        if hot_pages is not None and all_pages is not None:
            ratio = _ratio(all_pages.disk_reads_per_operation, hot_pages.disk_reads_per_operation)
            lines.append(
                f"  - {cache}, pages read from storage per read, whole range / hot range = "
                f"{_f(ratio, 1)}: "
                f"the hot set in memory reads less from storage: {direction(ratio, True)}."
            )
    ratio = _ratio(whole.get("warm"), whole.get("cold"))
    lines.append(
        f"- Whole-range reads, warm / cold = {_f(ratio, 2)} (warm {_f(whole.get('warm'))}, "
        f"cold {_f(whole.get('cold'))} reads/s). The original: caches dropped, reads fall "
        f"from thousands to about 70-80 per second: {direction(ratio, True)}."
    )
    return lines


def _oltp(run: Run, target: str) -> str:
    oltp = _step(run, "oltp-primary", target=target)
    only = _step(run, "read-only-primary", target=target)
    groups = "-" if oltp is None else ", ".join(
        f"{kind} {_f(_type_rate(oltp, kind))}/s" for kind in oltp.summary.connection_groups
    )  # fmt: skip
    return f"85:15:5 groups {groups}; read-only {_f(_rate(only))} reads/s"


def benchmark_4(runs: Runs) -> list[str]:
    run = runs.get("4-oltp-replicas-cost-small.yaml")
    if run is None:
        return []
    lines = [f"- {t.name} ({t.engine}): {_oltp(run, t.name)}." for t in run.targets]
    oltp_pg = _step(run, "oltp-primary", target="postgres")
    oltp_my = _step(run, "oltp-primary", target="mysql")
    for kind, what in (("read", "reads"), ("update", "updates")):
        ratio = _ratio(_type_rate(oltp_pg, kind), _type_rate(oltp_my, kind))
        lines.append(
            f"- {what.capitalize()} in the 85:15:5 mix, PostgreSQL / MySQL = {_f(ratio, 2)}. "
            f"The original has PostgreSQL's {what} ahead of MySQL's: {direction(ratio, True)}."
        )
    only = _ratio(_rate(_step(run, "read-only-primary", target="postgres")),
                  _rate(_step(run, "read-only-primary", target="mysql")))  # fmt: skip
    lines.append(
        f"- Read-only, PostgreSQL / MySQL = {_f(only, 2)}: {direction(only, True)}. "
        "The MongoDB side is FerretDB on SQLite (every find a table scan): its figures say "
        "nothing of MongoDB's, so none of the original's MongoDB comparisons is judged here."
    )
    return lines


def benchmark_5(runs: Runs) -> list[str]:
    with_index = runs.get("5-news-crud-with-tags-index-small.yaml")
    without = runs.get("5-news-crud-without-tags-index-small.yaml")
    lines = []
    ratio = _ratio(_rate(_step(without, "insert")), _rate(_step(with_index, "insert")))
    lines.append(
        f"- Inserts, without / with the Tags index = {_f(ratio, 2)} "
        f"({_f(_rate(_step(without, 'insert')))} vs {_f(_rate(_step(with_index, 'insert')))} "
        f"records/s). The original: MongoDB about 20% faster without it: "
        f"{direction(ratio, True)}."
    )
    for label, run in (("with the Tags index", with_index), ("without it", without)):
        if run is None:
            continue
        for phase in ("get-by-id", "update-by-id"):
            rates = [_rate(_step(run, phase, repeat)) for repeat in (1, 2, 3)]
            rising = _ratio(rates[2], rates[0])
            verdict = (
                f"The original's updates rose run over run: {trend(rates)}."
                if phase == "update-by-id"
                else "The original timed its gets once, with no repeats to compare."
            )
            lines.append(
                f"- {phase}, {label}, repeats 1-3 after one restart: "
                + ", ".join(_f(r) for r in rates)
                + f" ops/s (3rd / 1st = {_f(rising, 2)}). {verdict}"
            )
    return lines


FINDINGS: dict[int, Callable[[Runs], list[str]]] = {
    1: benchmark_1,
    3: benchmark_3,
    4: benchmark_4,
    5: benchmark_5,
}


def findings(benchmark: int, runs: Runs) -> list[str]:
    """The markdown bullets of one benchmark (none for benchmark 2: nothing runs here)."""
    judge = FINDINGS.get(benchmark)
    return [] if judge is None or not runs else judge(runs)
