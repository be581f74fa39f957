"""report.html from real runner results: every section, the summaries' numbers, no network."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dbbench_report import ResultsError, read_run, write_report
from dbbench_report.figures import cost_per_million
from tests.fixtures.result_sets import ResultSets
from tests.support.pages import Cell, parse

pytestmark = pytest.mark.integration

SECTIONS = ["summary", "overview", "distribution", "latency-time", "throughput", "side-by-side",
            "disk-reads", "stability", "latency", "storage", "repeats", "cost",
            "environment"]  # fmt: skip


def _close(cell: Cell, expected: float, digits: int) -> None:
    """The exact value is in data-value; the text is that value rounded for reading."""
    assert cell.value is not None
    assert float(cell.value) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    shown = float(cell.text.replace(",", ""))
    assert abs(shown - expected) <= 0.5 * 10**-digits + 1e-9, (cell, expected)


def _steps(run_dir: Path) -> list[dict[str, Any]]:
    run = json.loads((run_dir / "summary.json").read_text())
    steps = []
    for entry in run["steps"]:
        summary = json.loads((run_dir / entry["path"] / "summary.json").read_text())
        steps.append({**entry, "summary": summary})
    return steps


def test_every_section_and_chart_is_present(result_sets: ResultSets) -> None:
    path = write_report(result_sets.baseline.path)
    page = parse(path.read_text())
    assert page.sections == SECTIONS
    expected_charts = {"summary-throughput": 2, "summary-p99": 2, "side-by-side": 2,
                       "disk-reads": 2, "storage": 6}  # fmt: skip
    for phase in ("load", "oltp", "queries"):
        # insert runs once per target; the others twice (repeats: 2), one line each
        lines = 2 if phase == "load" else 4
        expected_charts[f"stability-{phase}"] = lines
        expected_charts[f"latency-{phase}"] = lines
        expected_charts[f"distribution-{phase}"] = lines
        expected_charts[f"p99-{phase}"] = 4  # p50 and p99 of each target's repeat 1
    assert page.charts == expected_charts
    assert page.external == [], "a report must not load anything at view time"
    assert "<script" not in path.read_text()


def test_numbers_equal_the_step_summaries(result_sets: ResultSets) -> None:
    page = parse(write_report(result_sets.baseline.path).read_text())
    steps = _steps(result_sets.baseline.path)
    assert len(steps) == 2 * (1 + 2 + 2)
    for step in steps:
        s = step["summary"]
        where = {"target": step["target"], "phase": step["phase"], "repeat": step["repeat"]}
        assert page.find("throughput", "operations", **where).value == repr(s["operations"])
        assert page.find("throughput", "errors", **where).value == repr(s["errors"])
        _close(page.find("throughput", "throughput", **where), s["throughput"], 1)
        for key in ("p50", "p95", "p99", "p999", "max"):
            _close(page.find("throughput", f"latencyMs.{key}", **where), s["latencyMs"][key], 3)
        for op, values in s["operationsByType"].items():
            cell = page.find("operations", "throughput", op=op, **where)
            _close(cell, values["throughput"], 1)
            assert page.find("operations", "operations", op=op, **where).value == repr(
                values["operations"]
            )
            # found next to operations (— for inserts), and not found.
            found, not_found = values["found"], values["notFound"]
            assert page.find("operations", "found", op=op, **where).value == (
                None if found is None else repr(found))  # fmt: skip
            if found is not None:
                # Reads, updates, scans find every row; a query may rightly find none.
                expected = values["operations"] if step["type"] != "query" else found
                assert (found, not_found) == (expected, 0), (step, op)
                assert 0 <= found <= values["operations"]
                assert page.find("operations", "notFound", op=op, **where).value == "0"
        lookups = [v for v in s["operationsByType"].values() if v["found"] is not None]
        shown = page.find("throughput", "notFound", **where).value
        assert shown == ("0" if lookups else None), (step, shown)
    assert any(v["found"] for s in steps for v in s["summary"]["operationsByType"].values())


def test_repeats_side_by_side_and_cost_are_computed_from_the_summaries(
    result_sets: ResultSets,
) -> None:
    page = parse(write_report(result_sets.baseline.path).read_text())
    steps = _steps(result_sets.baseline.path)
    for target in ("safe", "fast"):
        rates = [s["summary"]["throughput"] for s in steps
                 if s["target"] == target and s["phase"] == "oltp"]  # fmt: skip
        assert len(rates) == 2
        mean = sum(rates) / 2
        _close(page.find("repeats", "mean", target=target, phase="oltp"), mean, 1)
        _close(page.find("repeats", "min", target=target, phase="oltp"), min(rates), 1)
        _close(page.find("repeats", "max", target=target, phase="oltp"), max(rates), 1)
        spread = (max(rates) - min(rates)) / mean * 100
        _close(page.find("repeats", "spreadPercent", target=target, phase="oltp"), spread, 1)
        _close(page.find("side-by-side", f"throughput.mean.{target}", phase="oltp"), mean, 1)
        # pricePerHour 0.5, one database pod (external): 0.5 * 1e6 / (rate * 3600)
        expected = 0.5 * 1_000_000 / (mean * 3600)
        assert cost_per_million(0.5, 1, mean) == pytest.approx(expected)
        _close(page.find("cost", "costPerMillion", target=target, phase="oltp"), expected, 4)


def test_each_target_is_costed_at_its_own_price(result_sets: ResultSets) -> None:
    """The candidate run has no run-wide price; target `fast` sets its own
    (`targets[].hardware.pricePerHour: 0.8`), target `safe` none."""
    page = parse(write_report(result_sets.candidate.path).read_text())
    steps = _steps(result_sets.candidate.path)
    rates = [s["summary"]["throughput"] for s in steps
             if s["target"] == "fast" and s["phase"] == "oltp"]  # fmt: skip
    mean = sum(rates) / len(rates)
    _close(page.find("cost", "pricePerHour", target="fast", phase="oltp"), 0.8, 4)
    _close(page.find("cost", "hourly", target="fast", phase="oltp"), 0.8, 4)  # one pod
    _close(page.find("cost", "costPerMillion", target="fast", phase="oltp"),
           0.8 * 1_000_000 / (mean * 3600), 4)  # fmt: skip
    for key in ("pricePerHour", "costPerMillion"):
        assert page.find("cost", key, target="safe", phase="oltp").value is None
    # The baseline's run-wide price applies to both targets.
    baseline = parse(write_report(result_sets.baseline.path).read_text())
    for target in ("safe", "fast"):
        _close(baseline.find("cost", "pricePerHour", target=target, phase="oltp"), 0.5, 4)


def test_environment_names_what_was_measured(result_sets: ResultSets) -> None:
    html = write_report(result_sets.baseline.path).read_text()
    step = _steps(result_sets.baseline.path)[0]
    env = json.loads((result_sets.baseline.path / step["path"] / "environment.json").read_text())[
        "pods"
    ][0]
    assert env["server"]["version"] in html
    client = env["runner"]["client"]
    assert f"{client['driver']} {client['version']} ({client['implementation']})" in html
    # runner.statements as the runner ran it (unset on MariaDB: simple, the text protocol).
    assert client["statements"] == "simple"
    assert f"({client['implementation']}), simple statements" in html
    # the settings actually in force, per target (safe flushes at commit, fast does not)
    assert "innodb_flush_log_at_trx_commit = 1" in html
    assert "innodb_flush_log_at_trx_commit = 2" in html


def test_disk_reads_per_operation_are_the_summaries_and_cold_runs_say_why(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    html = write_report(result_sets.baseline.path).read_text()
    assert "<b data-key='cache' data-value='warm'>" in html
    page = parse(html)
    for step in _steps(result_sets.baseline.path):
        counters = step["summary"]["serverCounters"]  # real MariaDB: always recorded
        where = {"target": step["target"], "phase": step["phase"], "repeat": step["repeat"]}
        assert counters["diskReadsCounter"] == "Innodb_buffer_pool_reads"
        assert page.find("disk-reads", "diskReads", **where).value == repr(counters["diskReads"])
        _close(page.find("disk-reads", "diskReadsPerOperation", **where),
               counters["diskReadsPerOperation"], 3)  # fmt: skip
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    run = json.loads((copy / "summary.json").read_text())
    (copy / "summary.json").write_text(
        json.dumps({**run, "spec": {**run["spec"], "cache": "cold"}})
    )
    # A runner without the counter (older, or mongos/FerretDB): shown as not measured.
    step = copy / "fast" / "oltp" / "1" / "summary.json"
    step.write_text(json.dumps({**json.loads(step.read_text()), "serverCounters": None}))
    html = write_report(copy).read_text()
    page = parse(html)
    assert "<b data-key='cache' data-value='cold'>" in html
    assert "the database was restarted and the node's page cache dropped" in html
    missing = page.find("disk-reads", "diskReadsPerOperation", target="fast", phase="oltp",
                        repeat=1)  # fmt: skip
    assert (missing.value, missing.text) == (None, "—")


def test_restarts_are_shown_as_the_servers_uptimes_tell_them(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    """Real steps on servers that ran throughout: no restart after a target's first
    step. A step whose recorded server start is after the step before it ended (as
    cache: coldOnce's one restart leaves it) is shown restarted, and the note names
    the mode the run ran with."""
    page = parse(write_report(result_sets.baseline.path).read_text())
    steps = _steps(result_sets.baseline.path)
    firsts = {s["target"]: s["path"] for s in reversed(steps)}
    for step in steps:
        where = {"target": step["target"], "phase": step["phase"], "repeat": step["repeat"]}
        shown = page.find("disk-reads", "restarted", **where).text
        assert shown == ("—" if firsts[step["target"]] == step["path"] else "no"), where
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    run = json.loads((copy / "summary.json").read_text())
    (copy / "summary.json").write_text(
        json.dumps({**run, "spec": {**run["spec"], "cache": "coldOnce"}})
    )
    first, second = [s for s in steps if s["target"] == steps[0]["target"]][:2]
    environment_file = copy / second["path"] / "environment.json"
    environment = json.loads(environment_file.read_text())
    for pod in environment["pods"]:
        pod["server"]["startedAt"] = first["summary"]["endedAt"] + 1.0
    environment_file.write_text(json.dumps(environment))
    html = write_report(copy).read_text()
    assert "<b data-key='cache' data-value='coldOnce'>" in html
    where = {"target": second["target"], "phase": second["phase"], "repeat": second["repeat"]}
    assert parse(html).find("disk-reads", "restarted", **where).text == "yes"


def test_client_bound_flag_is_shown_when_the_runner_records_it(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    step = copy / "fast" / "oltp" / "1" / "summary.json"
    summary = json.loads(step.read_text())
    step.write_text(json.dumps({**summary, "clientBound": True, "clientCpuPerOpUs": 123.45}))
    page = parse(write_report(copy).read_text())
    flagged = page.find("throughput", "clientBound", target="fast", phase="oltp", repeat=1)
    assert flagged.text == "client-bound"
    _close(page.find("throughput", "clientCpuPerOpUs", target="fast", phase="oltp", repeat=1),
           123.45, 1)  # fmt: skip
    # The other target shows what its runner recorded: "no" when measured and
    # not bound, "—" from runners that predate client accounting.
    other = json.loads((copy / "safe" / "oltp" / "1" / "summary.json").read_text())
    expected = {True: "client-bound", False: "no", None: "—"}[other.get("clientBound")]
    shown = page.find("throughput", "clientBound", target="safe", phase="oltp", repeat=1)
    assert shown.text == expected


def test_unfinished_or_missing_results_are_named(result_sets: ResultSets, tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="no such directory"):
        read_run(tmp_path / "nope")
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    (copy / "safe" / "oltp" / "2" / "series-ops.csv").unlink()
    with pytest.raises(ResultsError, match=r"safe/oltp/2/series-ops.csv: missing"):
        read_run(copy)
    (copy / "summary.json").unlink()
    with pytest.raises(ResultsError, match="written when the run ends: the run is unfinished"):
        read_run(copy)


def test_shard_key_is_the_one_the_spec_set(result_sets: ResultSets, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    run = json.loads((copy / "summary.json").read_text())
    # The result sets were measured on external targets; describe them as deployed.
    targets = [{k: v for k, v in t.items() if k != "external"} for t in run["spec"]["targets"]]
    targets[0] = {**targets[0], "topology": "sharded", "shardKey": "VehicleID"}
    targets[1] = {**targets[1], "topology": "sharded"}
    run["spec"]["targets"] = targets
    (copy / "summary.json").write_text(json.dumps(run))
    page = parse(write_report(copy).read_text())
    names = [t["name"] for t in targets]
    shown = [page.find("environment", n, field="shard key").text for n in names]
    assert shown == ["VehicleID (hashed)", "_id (hashed)"]
