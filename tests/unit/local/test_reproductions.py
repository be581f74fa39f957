"""`make reproduce`'s table (hack/dbbench_local/reproductions.py): which small
variants run here, and the table and findings built from fetched runs.

Each run here is written as the results service lays it out (the run's
summary.json with the example's own spec and `step_result`'s phase results,
each step's merged summary.json, environment.json and series files) and read
back with the report's reader, as hack/reproduce.py reads `dbbench fetch`'s
copies; the figures are chosen so that each comparison's outcome is known.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbbench_contract.api import parse_spec
from dbbench_contract.run_summary import RunMeta, RunSummary, StepEntry, TargetEntry, step_result
from dbbench_contract.summary import StepSummary
from dbbench_local.reproduction_findings import direction, trend
from dbbench_local.reproductions import Outcome, table, variant
from dbbench_report.reading import Run, read_run

FIELD = Path(__file__).resolve().parents[3] / "examples" / "field"


def _body(file: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((FIELD / file).read_text())
    return body


def _write_run(root: Path, file: str, steps: list[dict[str, Any]], phase: str = "Succeeded",
               reason: str | None = None, message: str | None = None) -> Run:  # fmt: skip
    """A fetched run of examples/field/`file` whose steps have the given figures
    (`summary`: StepSummary fields; `started`: the server's start, epoch s)."""
    body = _body(file)
    spec = parse_spec(body["spec"])
    types = {p.name: p.type for p in spec.phases}
    entries = []
    for index, step in enumerate(steps):
        path = f"{step['target']}/{step['phase']}/{step.get('repeat', 1)}"
        directory = root / path
        directory.mkdir(parents=True)
        summary = StepSummary.from_wire({
            "target": step["target"], "engine": step.get("engine", "mysql"),
            "phase": step["phase"], "type": types[step["phase"]],
            "startedAt": 1000.0 * index, "endedAt": 1000.0 * index + 60,
            **step["summary"],
        })  # fmt: skip
        (directory / "summary.json").write_text(json.dumps(summary.to_wire()))
        environment = {
            "target": {"name": step["target"], "engine": summary.engine},
            "server": {"version": "9.7.0", "startedAt": step.get("started", 0.0)},
            "dataToCacheRatio": step.get("toCache"),
            "dataToMemoryRatio": step.get("toMemory"),
        }
        (directory / "environment.json").write_text(json.dumps(environment))
        windows = step.get("windows", [])
        (directory / "series-ops.csv").write_text(
            "operations,records,epoch,windowSeconds,opsPerSecond,recordsPerSecond,meanLatencyMs\n"
            + "".join(f"{i},{i},{i},1,{w},{w},1\n" for i, w in enumerate(windows))
        )
        (directory / "series-seconds.csv").write_text(
            "epochSecond,operation,operations,errors,meanLatencyMs,latencySumUs,p50LatencyMs,"
            "p99LatencyMs,maxLatencyMs\n"
        )
        repeat = step.get("repeat", 1)
        entries.append(StepEntry(
            step=index + 1, target=step["target"], phase=step["phase"], repeat=repeat,
            type=summary.type, path=path,
            result=None if step.get("unfinished") else step_result(step["phase"], repeat, summary),
        ))  # fmt: skip
    run = RunSummary(
        api_version="dbbench.io/v1alpha1",
        run=RunMeta(
            namespace="reproduce",
            name=body["metadata"]["name"],
            uid="u1",
            started_at="2026-11-28T10:00:00Z",
            completed_at="2026-11-28T10:05:00Z",
            phase=phase,
            reason=reason,
            message=message,
        ),
        spec=spec,
        steps=tuple(entries),
        targets=tuple(TargetEntry(name=t.name, server_version="9.7.0") for t in spec.targets),
    )
    (root / "summary.json").write_text(json.dumps(run.to_wire()))
    return read_run(root)


def _rate(ops: float, records: int = 0, **more: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "operations": int(ops * 60),
        "throughput": ops,
        "durationSeconds": 60.0,
        "latencyMs": {"p50": 1.0, "p99": 4.0},
    }
    if records:
        figures |= {"records": records, "recordsPerSecond": records / 60.0}
    return figures | more


def _outcome(file: str, run: Run | None = None, problem: str | None = None) -> Outcome:
    return Outcome(variant(file, _body(file)), run=run, problem=problem)


def test_every_small_variant_but_the_sharded_mongodb_one_runs_here() -> None:
    small = {p.name: variant(p.name, _body(p.name)) for p in FIELD.glob("*-small.yaml")}
    cannot = {name: v.not_here for name, v in small.items() if v.not_here}
    assert list(cannot) == ["2-single-vs-sharded-small.yaml"]
    assert "no mongod or mongos runs on this machine" in str(cannot.popitem()[1])
    # Benchmark 4's MongoDB target is the protocol stand-in: it runs.
    assert small["4-oltp-replicas-cost-small.yaml"].not_here is None
    assert small["3-cold-cache-small.yaml"].exclusive
    assert not small["1-insert-modes-client-key-small.yaml"].exclusive
    assert {v.benchmark for v in small.values()} == {1, 2, 3, 4, 5}


@pytest.mark.parametrize(
    ("ratio", "words"),
    [(1.2, "points the same way"), (0.8, "points the other way"), (1.02, "about equal"),
     (None, "not measured")],
)  # fmt: skip
def test_direction_of_a_ratio(ratio: float | None, words: str) -> None:
    assert words in direction(ratio, original_above_one=True)


@pytest.mark.parametrize(
    ("rates", "words"),
    [([1.0, 2.0, 3.0], "rising at every repeat"), ([3.0, 2.0, 1.0], "falling at every repeat"),
     ([7.0, 4.0, 5.0], "no steady trend"), ([1.0, None, 3.0], "not measured")],
)  # fmt: skip
def test_trend_of_repeats(rates: list[float | None], words: str) -> None:
    assert words in trend(rates)


def _benchmark_1(tmp_path: Path, client_rate: int, server_rate: int) -> str:
    client = _write_run(tmp_path / "c", "1-insert-modes-client-key-small.yaml", [
        {"target": "mysql", "phase": "load-client-key", "windows": [900, 1100],
         "summary": _rate(client_rate, records=client_rate * 60)},
        {"target": "mysql", "phase": "reads-1k", "summary": _rate(2000)},
        {"target": "mysql", "phase": "reads-5k", "summary": _rate(1600)},
    ])  # fmt: skip
    server = _write_run(tmp_path / "d", "1-insert-modes-server-key-small.yaml", [
        {"target": "mysql", "phase": "load-server-key",
         "summary": _rate(server_rate, records=server_rate * 60)},
    ])  # fmt: skip
    return table([_outcome("1-insert-modes-client-key-small.yaml", client),
                  _outcome("1-insert-modes-server-key-small.yaml", server)],
                 "test machine", "2026-11-28")  # fmt: skip


def test_benchmark_1_rows_and_the_insert_ranking(tmp_path: Path) -> None:
    text = _benchmark_1(tmp_path / "a", client_rate=1000, server_rate=1200)
    assert "Measured 2026-11-28 on test machine" in text
    assert "### `1-insert-modes-client-key-small.yaml` (run `field1-client-key-small`)" in text
    assert "| mysql | load-client-key | 1 | 60,000 | 0 | 1,000.0 | 1,000.0 | 1.00 | 4.00 |" in text
    assert "| 900-1,100 |" in text  # the stability windows' extent
    assert "(d)/(c) = 1.20. The original ranks (d) above (c): points the same way" in text
    assert "reads-1k (1,000 distinct keys): 2,000.0 reads/s, 0.500 s per 1,000" in text
    other = _benchmark_1(tmp_path / "b", client_rate=1200, server_rate=1000)
    assert "(d)/(c) = 0.83. The original ranks (d) above (c): points the other way" in other


def test_benchmark_2_is_named_as_not_run(tmp_path: Path) -> None:
    file = "2-single-vs-sharded-small.yaml"
    text = table([_outcome(file, problem=variant(file, _body(file)).not_here)], "m", "d")
    assert "## Benchmark 2" in text
    assert "not run: target single is MongoDB: no mongod or mongos runs on this machine" in text
    assert "Findings" not in text


def test_benchmark_3_cold_against_warm_and_disk_reads(tmp_path: Path) -> None:
    def reads(rate: float, per_op: float) -> dict[str, Any]:
        counters = {"diskReadsCounter": "Innodb_buffer_pool_reads", "diskReadsBefore": 0,
                    "diskReadsAfter": int(rate * 60 * per_op), "diskReads": int(rate * 60 * per_op),
                    "diskReadsPerOperation": per_op}  # fmt: skip
        return _rate(rate, serverCounters=counters)

    runs = {}
    for cache, whole in (("cold", 500), ("warm", 2000)):
        file = f"3-{cache}-cache-small.yaml"
        runs[file] = _write_run(tmp_path / cache, file, [
            {"target": "maria", "engine": "mariadb", "phase": "load",
             "summary": _rate(100, records=100_000)},
            {"target": "maria", "engine": "mariadb", "phase": "reads-hot-range",
             "summary": reads(3000, 0.01), "started": 100.0 if cache == "cold" else 0.0},
            {"target": "maria", "engine": "mariadb", "phase": "reads-whole-range",
             "summary": reads(whole, 0.8), "started": 1100.0 if cache == "cold" else 0.0,
             "toCache": 3.4, "toMemory": 0.11},
        ])  # fmt: skip
    text = table([_outcome(f, r) for f, r in runs.items()], "m", "d")
    # cache: cold: a restart before each measured step, seen in the servers' starts.
    cold = text.split("### `3-warm")[0]
    assert "| restarted before |" in cold
    assert "| 0.800 |" in cold
    assert cold.count("| yes |") == 2
    assert "whole range 500.0 reads/s, 0.800 pages read from storage per read" in text
    assert "(data+index / buffer pool 3.40, / pod memory 0.11)" in text
    assert "whole range / hot range = 80.0" in text
    assert "Whole-range reads, warm / cold = 4.00" in text
    assert text.count("points the same way") == 3


def test_benchmark_4_thread_groups_cost_and_engines(tmp_path: Path) -> None:
    def oltp(read: float, insert: float, update: float) -> dict[str, Any]:
        by_type = {
            kind: {"operations": int(rate * 30), "throughput": rate, "latencyMs": {"p99": 10.0}}
            for kind, rate in (("read", read), ("insert", insert), ("update", update))
        }
        return _rate(read + insert + update, records=int(insert * 30),
                     operationsByType=by_type,
                     connectionGroups={"read": 16, "insert": 3, "update": 1},
                     clientBound=True, clientCpuPerOpUs=272.2)  # fmt: skip

    steps = []
    for target, engine, scale in (("mysql", "mysql", 1.0), ("postgres", "postgresql", 2.0),
                                  ("mongo-standin", "mongodb", 0.1)):  # fmt: skip
        steps += [
            {"target": target, "engine": engine, "phase": "load",
             "summary": _rate(200, records=20_000)},
            {"target": target, "engine": engine, "phase": "oltp-primary",
             "summary": oltp(1000 * scale, 150 * scale, 50 / scale)},
            {"target": target, "engine": engine, "phase": "read-only-primary",
             "summary": _rate(1500 * scale)},
        ]  # fmt: skip
    file = "4-oltp-replicas-cost-small.yaml"
    text = table([_outcome(file, _write_run(tmp_path, file, steps))], "m", "d")
    assert "groups (connections: ops/s, p99 ms)" in text
    # The runner at its CPU budget: the figure measures the load generator too.
    assert "| bound, 272 |" in text
    assert "read x16: 2,000.0/s p99 10.00; insert x3: 300.0/s p99 10.00; update x1: 25.0/s" in text
    # mysql: 2 pods at 0.1 an hour; 1,500 reads/s: 0.2 / 5.4M operations an hour.
    assert f"| {0.2 * 1e6 / (1500 * 3600):,.4f} |" in text
    assert "- postgres (postgresql): 85:15:5 groups read 2,000.0/s, insert 300.0/s" in text
    assert "Reads in the 85:15:5 mix, PostgreSQL / MySQL = 2.00" in text
    assert "Updates in the 85:15:5 mix, PostgreSQL / MySQL = 0.50. The original has " \
           "PostgreSQL's updates ahead of MySQL's: points the other way" in text  # fmt: skip
    assert "FerretDB on SQLite" in text


def test_benchmark_5_restart_once_and_rising_repeats(tmp_path: Path) -> None:
    runs = {}
    for label, insert_rate in (("with", 900), ("without", 1000)):
        steps: list[dict[str, Any]] = [
            {"target": "maria", "engine": "mariadb", "phase": "insert",
             "summary": _rate(insert_rate, records=insert_rate * 60)},
        ]  # fmt: skip
        # coldOnce: the server restarted once, before the first get (step 1 ends at 60).
        for phase, base in (("get-by-id", 3000.0), ("update-by-id", 1000.0)):
            for repeat in (1, 2, 3):
                steps.append({"target": "maria", "engine": "mariadb", "phase": phase,
                              "repeat": repeat, "summary": _rate(base * (1 + repeat / 10)),
                              "started": 500.0})  # fmt: skip
        file = f"5-news-crud-{label}-tags-index-small.yaml"
        runs[file] = _write_run(tmp_path / label, file, steps)
    text = table([_outcome(f, r) for f, r in runs.items()], "m", "d")
    with_index = text.split("### `5-news-crud-without")[0]
    assert with_index.count("| yes |") == 1
    assert with_index.count("| no |") == 5
    assert "Inserts, without / with the Tags index = 1.11 (1,000.0 vs 900.0 records/s)" in text
    assert ("update-by-id, without it, repeats 1-3 after one restart: 1,100.0, 1,200.0, "
            "1,300.0 ops/s (3rd / 1st = 1.18). The original's updates rose run over run: "
            "rising at every repeat") in text  # fmt: skip


def test_a_failed_run_shows_its_reason_and_unfinished_steps(tmp_path: Path) -> None:
    file = "1-insert-modes-client-key-small.yaml"
    run = _write_run(tmp_path, file, [
        {"target": "mysql", "phase": "load-client-key", "summary": _rate(1000, records=60_000)},
        {"target": "mysql", "phase": "reads-1k", "summary": _rate(1), "unfinished": True},
    ], phase="Failed", reason="Timeout", message="spec.timeout exceeded")  # fmt: skip
    text = table([_outcome(file, run, problem="the run failed")], "m", "d")
    assert "Failed, 2026-11-28T10:00:00Z .. 2026-11-28T10:05:00Z (Timeout: spec.timeout " \
           "exceeded); the run failed" in text  # fmt: skip
    assert "Steps without results (the run ended before them): mysql/reads-1k/1." in text
    assert "| mysql | load-client-key |" in text
    assert "(d)/(c) = -" in text
    assert "not measured" in text


def test_the_reproductions_doc_names_every_field_manifest() -> None:
    doc = (FIELD.parents[1] / "docs" / "reproductions.md").read_text()
    unnamed = sorted(p.name for p in FIELD.glob("*.yaml") if f"`{p.name}`" not in doc)
    assert unnamed == [], f"docs/reproductions.md does not name {unnamed}"


REAL = Path(__file__).resolve().parents[2] / "data" / "reproductions"


def test_the_doc_quotes_the_table_of_the_real_runs() -> None:
    """tests/data/reproductions/: the summaries, environments and series of the
    runs `make reproduce` fetched on the node (histograms and pod files left out).
    Their table, built again here, is the one docs/reproductions.md quotes: every
    row of every run's table and every finding line, figure for figure."""
    outcomes = []
    for path in sorted(FIELD.glob("*-small.yaml")):
        v = variant(path.name, _body(path.name))
        run = None if v.not_here else read_run(REAL / v.name)
        outcomes.append(Outcome(v, run=run, problem=v.not_here))
    text = table(outcomes, "m", "d")
    doc = (FIELD.parents[1] / "docs" / "reproductions.md").read_text()
    quoted = [line for line in text.splitlines() if line.startswith(("| ", "- ", "  - "))]
    assert len(quoted) > 40
    missing = [line for line in quoted if line not in doc]
    assert missing == [], f"docs/reproductions.md lacks {len(missing)} lines, e.g. {missing[:3]}"
    # What the runs showed: every runnable variant succeeded; benchmark 2 did not run.
    assert text.count("Succeeded, 2026-11-28") == 7
    assert "not run: target single is MongoDB" in text
