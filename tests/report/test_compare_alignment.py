"""Steps line up across runs by what they did, not by their phases' names (pure).

Field benchmark 1 runs its insert modes as separate runs whose loads are
named `load-client-key` and `load-server-key`; compared, they must show as one
workload with its four modes ranked, in one table and one chart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbbench_contract.environment import Environment, TargetInfo
from dbbench_contract.run_summary import RunMeta, RunSummary, StepEntry, StepResult
from dbbench_contract.summary import LatencyMs, StepSummary
from dbbench_report.compare_page import compare_page
from dbbench_report.comparing import compare, modes, table
from dbbench_report.reading import Run, Step

# (target, idMode) -> inserts/s, as the original's ranking (b) > (d) > (c) > (a)
RATES = {("mongo", "server"): 9000.0, ("mysql", "server"): 7000.0,
         ("mysql", "client"): 5000.0, ("mongo", "client"): 3000.0}  # fmt: skip


def _run(name: str, id_mode: str) -> Run:
    phase = f"load-{id_mode}-key"
    phases: list[dict[str, Any]] = [
        {"name": phase, "type": "insert", "idMode": id_mode, "batchSize": 1, "reportEvery": 1000},
        {"name": "reads-10k", "type": "pointReads", "idMode": "client", "keys": 10000,
         "operations": 10000, "reportEvery": 1000},
    ]  # fmt: skip
    spec = {"targets": [{"name": "mongo", "engine": "mongodb"}, {"name": "mysql",
            "engine": "mysql"}], "phases": phases}  # fmt: skip
    steps, entries = [], []
    for target in ("mongo", "mysql"):
        for p in phases:
            rate = RATES[(target, id_mode)] if p["type"] == "insert" else 2000.0
            summary = StepSummary(
                target=target,
                engine="x",
                phase=p["name"],
                type=p["type"],
                throughput=rate,
                latency_ms=LatencyMs(p99=1000.0 / rate),
            )
            path = f"{target}/{p['name']}/1"
            steps.append(
                Step(
                    target,
                    p["name"],
                    1,
                    p["type"],
                    path,
                    summary,
                    Environment(target=TargetInfo(name=target, engine="x")),
                    (),
                    (),
                    (),
                )
            )
            entries.append(StepEntry(step=len(entries) + 1, target=target, phase=p["name"],
                                     repeat=1, type=p["type"], path=path,
                                     result=StepResult(name=p["name"])))  # fmt: skip
    summary = RunSummary(api_version="dbbench.io/v1alpha1",
                         run=RunMeta(namespace="bench", name=name, uid="u"), spec=spec,
                         steps=tuple(entries))  # fmt: skip
    return Run(Path(name), summary, tuple(steps), ())


def test_insert_modes_named_differently_line_up_as_one_workload() -> None:
    runs = [_run("field1-client-key", "client"), _run("field1-server-key", "server")]
    rows = compare(runs)
    # The reads did the same thing in both runs: one row each target, both runs filled.
    reads = [r for r in rows if r.workload.type == "pointReads"]
    assert [(r.target, r.phase) for r in reads] == [("mongo", "reads-10k"), ("mysql", "reads-10k")]
    assert all(None not in r.cells for r in reads)
    ranked = modes(runs, rows)
    assert list(ranked) == ["insert batchSize=1"]
    entries = ranked["insert batchSize=1"]
    assert [(e.label.split()[-1], e.id_mode) for e in entries] == [
        ("mongo", "server"),
        ("mysql", "server"),
        ("mysql", "client"),
        ("mongo", "client"),
    ]
    assert [e.throughput for e in entries] == sorted(RATES.values(), reverse=True)
    text = table(runs, rows)
    assert "Modes of insert batchSize=1:" in text
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
