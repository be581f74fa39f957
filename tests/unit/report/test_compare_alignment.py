"""Steps line up across runs by what they did, not by their phases' names (pure).

Field benchmark 1 runs its insert modes as separate runs whose loads are
named `load-client-key` and `load-server-key`; compared, they must show as one
workload with its four modes ranked, in one table and one chart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from dbbench_contract.api import Latency, PhaseResult
from dbbench_contract.environment import Environment, TargetInfo
from dbbench_contract.run_summary import RunMeta, RunSummary, StepEntry
from dbbench_contract.summary import StepSummary
from dbbench_report.compare_page import compare_page
from dbbench_report.comparing import compare, modes, table
from dbbench_report.reading import Run, Step

# (target, idMode) -> inserts/s, as the original's ranking (b) > (d) > (c) > (a)
RATES = {("mongo", "server"): 9000.0, ("mysql", "server"): 7000.0,
         ("mysql", "client"): 5000.0, ("mongo", "client"): 3000.0}  # fmt: skip


def _run(name: str, id_mode: str) -> Run:
    phases: list[dict[str, Any]] = [
        {"name": f"load-{id_mode}-key", "type": "insert", "idMode": id_mode, "batchSize": 1,
         "reportEvery": 1000},
        {"name": "reads-10k", "type": "pointReads", "idMode": "client", "keys": 10000,
         "operations": 10000, "reportEvery": 1000},
    ]  # fmt: skip
    rates = {(t, p["name"]): RATES[(t, id_mode)] if p["type"] == "insert" else 2000.0
             for t in ("mongo", "mysql") for p in phases}  # fmt: skip
    return _built(name, phases, rates)


def _built(
    name: str,
    phases: list[dict[str, Any]],
    rates: dict[tuple[str, str], float],
    **spec: Any,
) -> Run:
    """A run of `phases` on the targets of `rates`, each step at its rate (ops/s);
    `spec`: the run's other fields (runner, dataset)."""
    targets = list(dict.fromkeys(t for t, _ in rates))
    spec = {
        "targets": [{"name": t, "engine": "mariadb"} for t in targets],
        "phases": phases,
        **spec,
    }
    steps: list[Step] = []
    entries: list[StepEntry] = []
    for (target, phase), rate in rates.items():
        kind = next(p["type"] for p in phases if p["name"] == phase)
        summary = StepSummary(target=target, engine="x", phase=phase, type=kind,
                              throughput=rate, latency_ms=Latency(p99=1000.0 / rate))  # fmt: skip
        path = f"{target}/{phase}/1"
        environment = Environment(target=TargetInfo(name=target, engine="x"))
        steps.append(Step(target, phase, 1, kind, path, summary, environment, (), (), ()))
        entries.append(StepEntry(step=len(entries) + 1, target=target, phase=phase,
                                 repeat=1, type=kind, path=path,
                                 result=PhaseResult(name=phase)))  # fmt: skip
    run = RunSummary(api_version="dbbench.io/v1alpha1",
                     run=RunMeta(namespace="bench", name=name, uid="u"), spec=spec,
                     steps=tuple(entries))  # fmt: skip
    return Run(Path(name), run, tuple(steps), ())


def test_insert_modes_named_differently_line_up_as_one_workload() -> None:
    runs = [_run("field1-client-key", "client"), _run("field1-server-key", "server")]
    rows = compare(runs)
    # The reads did the same thing in both runs: one row each target, both runs filled.
    reads = [r for r in rows if r.workload.type == "pointReads"]
    assert [(r.target, r.phase) for r in reads] == [("mongo", "reads-10k"), ("mysql", "reads-10k")]
    assert all(None not in r.cells for r in reads)
    ranked = modes(runs, rows)
    # One family; the runner and the data set (the API's defaults, as every run
    # summary writes them) follow the phase's own fields.
    (family,) = ranked
    assert family.startswith("insert batchSize=1 pods=1 threads=1 dataset=")
    entries = ranked[family]
    assert [(e.label.split()[-1], e.id_mode) for e in entries] == [
        ("mongo", "server"),
        ("mysql", "server"),
        ("mysql", "client"),
        ("mongo", "client"),
    ]
    assert [e.throughput for e in entries] == sorted(RATES.values(), reverse=True)
    text = table(runs, rows)
    assert f"Modes of {family}:" in text
    assert "0.33x" in text  # mongo client-key: 3000 / 9000 of the best


def test_the_page_has_one_table_and_one_chart_of_the_four_modes() -> None:
    runs = [_run("field1-client-key", "client"), _run("field1-server-key", "server")]
    page = compare_page(runs, compare(runs))
    assert page.count('data-table="modes-0"') == 1
    assert page.count('data-chart="modes-0"') == 1
    assert 'data-series="4"' in page
    for (target, id_mode), rate in RATES.items():
        assert f'data-entry="bench/field1-{id_mode}-key {target} {id_mode}"' in page
        assert f'data-value="{rate!r}"' in page


def test_runs_of_one_mode_show_no_modes_table() -> None:
    runs = [_run("before", "client"), _run("after", "client")]
    assert modes(runs, compare(runs)) == {}
    assert "Modes of" not in table(runs, compare(runs))


READS: dict[str, Any] = {"type": "pointReads", "keys": 10000, "operations": 10000}
MIX: dict[str, Any] = {"type": "mix", "mix": {"read": 50, "update": 50}, "duration": "60s",
                       "warmup": "5s"}  # fmt: skip
SKEWED: dict[str, Any] = {"type": "pointReads", "distribution": {"type": "zipfian"},
                          "duration": "30s"}  # fmt: skip


def test_steps_line_up_by_what_they_did_never_by_their_names() -> None:
    """The same workloads under other names line up; the same name for another
    workload does not (aligned by name, both would go the other way)."""
    before = _built("before", [{"name": "reads", **READS}, {"name": "mix", **MIX}],
                    {("db", "reads"): 1000.0, ("db", "mix"): 500.0})  # fmt: skip
    # The same two workloads renamed (`1m` is `60s`), and `reads` is now a zipfian read.
    after = _built(
        "after",
        [{"name": "point-reads", **READS}, {"name": "oltp", **MIX, "duration": "1m"},
         {"name": "reads", **SKEWED}],
        {("db", "point-reads"): 1100.0, ("db", "oltp"): 400.0, ("db", "reads"): 3000.0},
    )  # fmt: skip
    rows = compare([before, after])
    assert [(r.phase, [c and c.phase for c in r.cells]) for r in rows] == [
        ("reads|point-reads", ["reads", "point-reads"]),
        ("mix|oltp", ["mix", "oltp"]),
        ("reads", [None, "reads"]),
    ]
    assert rows[0].relative(1) == (1100.0 - 1000.0) / 1000.0 * 100.0
    assert rows[1].relative(1) == (400.0 - 500.0) / 500.0 * 100.0
    assert rows[2].relative(1) is None  # the zipfian read is compared with nothing


@pytest.mark.parametrize(
    ("field", "first", "second"),
    [
        ("runner", {"pods": 1, "threads": 1}, {"pods": 1, "threads": 8}),
        ("runner", {"pods": 1, "threads": 4}, {"pods": 2, "threads": 4}),
        ("dataset", {"shape": "flat45", "records": 1000}, {"shape": "flat45", "records": 2000}),
        ("dataset", {"shape": "flat45", "seed": 1}, {"shape": "flat45", "seed": 2}),
        ("dataset", {"shape": "flat45", "recordSize": 128},
         {"shape": "flat45", "recordSize": 1000}),
    ],
)  # fmt: skip
def test_runs_that_differ_in_the_runner_or_the_data_set_are_different_workloads(
    field: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    phases: list[dict[str, Any]] = [{"name": "reads", **READS}, {"name": "mix", **MIX}]
    rates = {("db", "reads"): 1000.0, ("db", "mix"): 500.0}
    doubled = {k: 2 * v for k, v in rates.items()}
    runs = [_built("a", phases, rates, **{field: first}),
            _built("b", phases, doubled, **{field: second})]  # fmt: skip
    rows = compare(runs)
    # Each phase twice, each row with the one run that did it: no difference shown.
    assert [(r.phase, [c is not None for c in r.cells]) for r in rows] == [
        ("reads", [True, False]), ("mix", [True, False]),
        ("reads", [False, True]), ("mix", [False, True]),
    ]  # fmt: skip
    assert all(r.relative(1) is None and r.noise(1) == "missing" for r in rows)


def test_one_and_eight_threads_are_two_rows_side_by_side() -> None:
    """Field benchmark 2's queries at 1 and at 8 threads (the phase's own `threads`
    over the runner's): two workloads, each shown with its threads, no Δ."""
    query = {"name": "queries", "type": "query", "duration": "60s", "warmup": "10s"}
    one = _built("one", [{**query, "threads": 1}], {("mongo", "queries"): 800.0},
                 runner={"pods": 1, "threads": 8})  # fmt: skip
    eight = _built("eight", [query], {("mongo", "queries"): 5000.0},
                   runner={"pods": 1, "threads": 8})  # fmt: skip
    runs = [one, eight]
    rows = compare(runs)
    assert len(rows) == 2
    assert [[c is not None for c in r.cells] for r in rows] == [[True, False], [False, True]]
    assert [dict(r.workload.items())["threads"] for r in rows] == ["1", "8"]
    lines = table(runs, rows).splitlines()
    assert len(lines) == 3  # the header and one line each; no modes table
    one_line, eight_line = lines[1].split(), lines[2].split()
    assert one_line[:3] == ["mongo", "queries", "[threads=1]"]
    assert eight_line[:3] == ["mongo", "queries", "[threads=8]"]
    # One line holds bench/one's figures, the other bench/eight's; neither a Δ.
    assert one_line[3:] == ["800.0", "1.250", "-", "-", "-", "-", "missing"]
    assert eight_line[3:] == ["-", "-", "5,000.0", "-", "0.200", "-", "missing"]
    page = compare_page(runs, rows)
    shown = [w.split() for w in dict.fromkeys(re.findall(r'data-workload="([^"]*)"', page))]
    assert [[p for p in w if p.startswith("threads=")] for w in shown] == [
        ["threads=1"], ["threads=8"]]  # fmt: skip


def test_another_warmup_is_another_workload_and_no_warmup_is_zero() -> None:
    def run(name: str, warmup: str | None) -> Run:
        mix = {**MIX, "name": "mix", "warmup": warmup}
        return _built(name, [{k: v for k, v in mix.items() if v is not None}],
                      {("db", "mix"): 500.0})  # fmt: skip

    assert len(compare([run("a", "5s"), run("b", "10s")])) == 2
    assert len(compare([run("a", "5s"), run("b", "5000ms")])) == 1
    same = compare([run("a", None), run("b", "0s")])
    assert [[c is not None for c in r.cells] for r in same] == [[True, True]]
