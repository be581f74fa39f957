"""The results browser's series page (dbbench_results.series_page), pure: a series
with a known step (Otava's real analysis finds it) drawn as one line per target
and phase with a point per run, the change marked at the run where it starts,
and every point, mark and row linking to the right report or compare view."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

import numpy as np

from dbbench_contract.history import SeriesHistory, SeriesPoint
from dbbench_results.history.answer import history
from dbbench_results.history.changes import Judging
from dbbench_results.series_page import series_page
from tests.support.pages import parse

RUNS = 12
STEP_AT = 8  # run nightly-8 is the first at 0.6 of the speed


def points(speeds: list[float]) -> list[SeriesPoint]:
    """Run i: a load phase (one repeat, with records/s) and a reads phase (two
    repeats, each with its own noise); throughput scales with the speed,
    latencies inversely."""
    rng = np.random.default_rng(5)
    found = []
    for i, speed in enumerate(speeds):
        for phase, repeats in (("load", 1), ("reads", 2)):
            for repeat in range(1, repeats + 1):
                s = speed * (1 + 0.02 * rng.standard_normal())
                found.append(SeriesPoint(
                    namespace="bench", series="nightly", run=f"nightly-{i}", uid=f"uid-{i}",
                    ended_at=f"2026-11-01T{i:02d}:00:00Z", target="db", phase=phase,
                    repeat=repeat, ops_per_second=1000 * s,
                    records_per_second=10_000 * s if phase == "load" else None,
                    p50_ms=0.5 / s, p95_ms=1.5 / s, p99_ms=2.0 / s, p999_ms=5.0 / s,
                ))  # fmt: skip
    return found


def stepped() -> SeriesHistory:
    return history(points([1.0] * STEP_AT + [0.6] * (RUNS - STEP_AT)), "bench", "nightly",
                   Judging())  # fmt: skip


@dataclass
class Svg(HTMLParser):
    """Every annotated SVG group (a point or a mark): its data attributes, its
    tooltip and the link around its marker."""

    groups: list[dict[str, str]] = field(default_factory=list)
    _open: dict[str, str] | None = None
    _in_title: bool = False

    def __post_init__(self) -> None:
        super().__init__()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "g" and "data-run" in a:
            self._open = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
            self._open["id"] = a["id"]
            self.groups.append(self._open)
        elif tag == "title" and self._open is not None:
            self._in_title = True
        elif tag == "a" and self._open is not None and "xlink:href" in a:
            self._open["href"] = a["xlink:href"]
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._in_title and self._open is not None:
            self._open["title"] = self._open.get("title", "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False


def svg_groups(html: str) -> list[dict[str, str]]:
    parser = Svg()
    parser.feed(html)
    return parser.groups


def test_one_point_per_run_on_each_line_of_each_metric() -> None:
    html = series_page(stepped())
    groups = [g for g in svg_groups(html) if "point" in g]
    for metric in ("opsPerSecond", "p50Ms", "p95Ms", "p99Ms", "p999Ms", "errors"):
        for phase in ("load", "reads"):
            line = [g for g in groups if g["metric"] == metric and g["phase"] == phase]
            assert [g["run"] for g in line] == [f"nightly-{i}" for i in range(RUNS)], metric
    # records/s: only the load phase has it
    records = [g for g in groups if g["metric"] == "recordsPerSecond"]
    assert {g["phase"] for g in records} == {"load"}
    assert len(records) == RUNS
    page = parse(html)
    assert page.charts == {f"trend-{m}": 2 for m in ("opsPerSecond", "p99Ms", "p50Ms", "p95Ms",
                                                     "p999Ms", "errors")} | {
        "trend-recordsPerSecond": 1}  # fmt: skip
    # Each point opens its own run's report (relative: works behind the API proxy).
    for g in groups:
        run = g["run"]
        assert g["href"] == f"../../runs/bench/{run}/uid-{run.split('-')[1]}/"


def test_tooltips_give_the_runs_mean_and_its_repeats_range() -> None:
    answer = stepped()
    groups = svg_groups(series_page(answer))
    reads = [p for p in answer.points if p.run == "nightly-3" and p.phase == "reads"]
    ops = [p.ops_per_second for p in reads]
    point = next(g for g in groups if "point" in g and g["run"] == "nightly-3"
                 and g["phase"] == "reads" and g["metric"] == "opsPerSecond")  # fmt: skip
    assert point["title"] == (
        f"nightly-3 (2026-11-01T03:00:00Z)\ndb reads: ops/s {sum(ops) / 2:,.1f}\n"
        f"2 repeats: {min(ops):,.1f} to {max(ops):,.1f}"
    )
    load = next(g for g in groups if "point" in g and g["run"] == "nightly-3"
                and g["phase"] == "load" and g["metric"] == "p99Ms")  # fmt: skip
    p99 = next(p.p99_ms for p in answer.points if p.run == "nightly-3" and p.phase == "load")
    assert load["title"] == f"nightly-3 (2026-11-01T03:00:00Z)\ndb load: p99 (ms) {p99:,.3f}"


def test_the_change_is_marked_at_its_run_and_compared_with_the_run_before() -> None:
    answer = stepped()
    assert {c.run for c in answer.change_points} == {f"nightly-{STEP_AT}"}
    html = series_page(answer)
    marks = [g for g in svg_groups(html) if "mark" in g]
    # one mark per change point of the shown operation type (all of them here)
    assert len(marks) == len(answer.change_points) > 0
    assert {g["run"] for g in marks} == {f"nightly-{STEP_AT}"}
    assert {g["mark"] for g in marks} == {"regression"}  # slower and higher latencies
    compare = (f"../../compare?run=bench%2Fnightly-{STEP_AT - 1}%2Fuid-{STEP_AT - 1}"
               f"&run=bench%2Fnightly-{STEP_AT}%2Fuid-{STEP_AT}")  # fmt: skip
    assert {g["href"] for g in marks} == {compare}
    ops = next(c for c in answer.change_points if c.metric == "opsPerSecond"
               and c.phase == "reads")  # fmt: skip
    mark = next(g for g in marks if g["metric"] == "opsPerSecond" and g["phase"] == "reads")
    pct = (ops.after - ops.before) / ops.before * 100
    assert mark["title"] == (
        f"Regression at nightly-{STEP_AT}: ops/s of db reads (all) {ops.before:,.1f} -> "
        f"{ops.after:,.1f} ({pct:+.1f}%), p={ops.pvalue:.2g}"
    )
    assert -45 < pct < -35
    # The legend table: the same change points, each before -> after exact.
    page = parse(html)
    assert len([c for c in page.cells if c.table == "changes" and c.key == "before"]) == len(
        answer.change_points
    )
    row = {"run": f"nightly-{STEP_AT}", "phase": "reads", "metric": "opsPerSecond", "op": "all"}
    assert page.find("changes", "direction", **row).text == "Regression"
    for key, value in (("before", ops.before), ("after", ops.after), ("changePercent", pct)):
        cell = page.find("changes", key, **row)
        assert float(cell.value or "nan") == value
        assert cell.text == f"{value:,.1f}"
    # Runs: the step's run counts its change points; every later run none.
    counts = {c.row["run"]: int(c.value or "0") for c in page.cells
              if c.table == "runs" and c.key == "changePoints"}  # fmt: skip
    assert counts == {f"nightly-{i}": len(answer.change_points) if i == STEP_AT else 0
                      for i in range(RUNS)}  # fmt: skip


def test_an_improvement_is_marked_apart_and_links_in_tables() -> None:
    answer = history(points([1.0] * 8 + [1.5] * 4), "bench", "nightly", Judging())
    html = series_page(answer)
    marks = [g for g in svg_groups(html) if "mark" in g]
    assert marks
    assert {g["mark"] for g in marks} == {"improvement"}
    assert '<b class="improvement">Improvement</b>' in html
    assert 'href="../../runs/bench/nightly-8/uid-8/"' in html  # the changes table's run
    assert "<form method='get' action='../../compare'>" in html
    assert "value='bench/nightly-0/uid-0'" in html


def test_names_are_escaped_and_an_empty_series_says_so() -> None:
    hostile = [p.model_copy(update={"target": "<script>x</script>"})
               for p in points([1.0] * 3)]  # fmt: skip
    html = series_page(history(hostile, "bench", "nightly", Judging()))
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    empty = series_page(history([], "bench", "nightly", Judging()))
    assert "No runs of this series are indexed." in empty


def test_another_operation_type_draws_its_own_figures() -> None:
    answer = stepped()
    kinds = [p.model_copy(update={"operation_type": "read", "ops_per_second": 7.0})
             for p in answer.points if p.phase == "reads"]  # fmt: skip
    both = answer.model_copy(update={"points": (*answer.points, *kinds)})
    html = series_page(both, "read")
    groups = [g for g in svg_groups(html) if "point" in g and g["metric"] == "opsPerSecond"]
    assert {g["phase"] for g in groups} == {"reads"}
    assert all("ops/s 7.0" in g["title"] for g in groups)
    assert not [g for g in svg_groups(html) if "mark" in g]  # the changes are of `all`
    assert '<a href="?op=all">all</a>' in html
