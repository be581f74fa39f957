"""The results browser's series page in headless Chromium, on a real results
service that indexed real run summaries as they were uploaded (a series with a
step at nightly-6, two repeats of its reads phase): every number the page
shows (tooltips, tables, the summary) read from the DOM and checked against
the index as the browser answers it (/api/series), the step marked at its
run, and one click from a point to its report and from a mark to the compare
view of its run and the one before."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from selenium.webdriver.common.by import By

from dbbench_contract.history import METRICS, Metric, SeriesHistory, SeriesPoint
from dbbench_local.results_service import running_results_service
from tests.integration.results.series_screenshot import NS, RUNS, STEP_AT, series_claim
from tests.support.browser_server import browser_server
from tests.support.chromium import chromium, console_errors, wait_for_title
from tests.support.series_runs import VIEW_REPORTS

pytestmark = pytest.mark.integration
LABELS = {
    "opsPerSecond": "ops/s",
    "recordsPerSecond": "records/s",
    "p50Ms": "p50 (ms)",
    "p95Ms": "p95 (ms)",
    "p99Ms": "p99 (ms)",
    "p999Ms": "p99.9 (ms)",
    "errors": "errors",
}
DIGITS = {m: 1 if m in ("opsPerSecond", "recordsPerSecond", "errors") else 3 for m in METRICS}
# What the page reads out of the DOM: every annotated SVG group (points and
# marks, their tooltip and link) and every table cell with its row's data.
READ_DOM = """
const groups = [...document.querySelectorAll('svg g[data-run]')].map(g => ({
  data: {...g.dataset}, title: g.querySelector(':scope > title').textContent,
  href: g.querySelector('a').getAttribute('xlink:href')}));
const cells = [...document.querySelectorAll('table[data-table] td[data-key]')].map(td => ({
  table: td.closest('table').dataset.table, key: td.dataset.key, value: td.dataset.value,
  text: td.textContent, row: {...td.closest('tr').dataset}}));
const para = k => document.querySelector(`[data-key=${k}]`).textContent;
return {groups, cells, counts: para('counts'), verdict: para('verdict')};
"""


def fmt(metric: str, value: float) -> str:
    return f"{value:,.{DIGITS[metric]}f}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SeriesHistory]]:
    base = tmp_path_factory.mktemp("series-page")
    with running_results_service(base / "service", extra_args=VIEW_REPORTS) as service:
        series_claim(service, base / "source")
        with browser_server(service.root, base / "browser.log") as url:
            with urllib.request.urlopen(f"{url}/api/series/{NS}/nightly", timeout=60) as answer:
                index = SeriesHistory.from_wire(json.loads(answer.read()))
            yield url, index


def by_run(points: list[SeriesPoint], metric: Metric) -> dict[str, list[float]]:
    """The index's values of one line, per run in the series' order (a run's repeats)."""
    values: dict[str, list[float]] = {}
    for p in points:
        value = p.value(metric)
        if value is not None:
            values.setdefault(p.run, []).append(value)
    return values


def check_points(groups: list[dict[str, Any]], index: SeriesHistory) -> None:
    """Each line has one point per run, in run order, its tooltip the index's figures."""
    runs = list(dict.fromkeys(p.run for p in index.points))
    assert runs == [f"nightly-{i}" for i in range(RUNS)]
    checked = 0
    for phase in ("load", "reads"):
        line = [p for p in index.points if p.phase == phase and p.operation_type == "all"]
        for metric in METRICS:
            shown = [g for g in groups if "point" in g["data"] and g["data"]["metric"] == metric
                     and g["data"]["phase"] == phase]  # fmt: skip
            values = by_run(line, metric)
            assert [g["data"]["run"] for g in shown] == list(values), (phase, metric)
            for g, (run, repeats) in zip(shown, values.items(), strict=True):
                ended = next(p.ended_at for p in line if p.run == run)
                mean = sum(repeats) / len(repeats)
                tip = f"{run} ({ended})\ndb {phase}: {LABELS[metric]} {fmt(metric, mean)}"
                if len(repeats) > 1:
                    tip += (f"\n{len(repeats)} repeats: {fmt(metric, min(repeats))} to "
                            f"{fmt(metric, max(repeats))}")  # fmt: skip
                assert g["title"] == tip
                uid = next(p.uid for p in line if p.run == run)
                assert g["href"] == f"../../runs/{NS}/{run}/{uid}/"
                checked += 1
    assert checked == RUNS * (7 + 6)  # reads has no records/s
    assert len([g for g in groups if "point" in g["data"]]) == checked


def check_marks(groups: list[dict[str, Any]], index: SeriesHistory) -> None:
    marks = [g for g in groups if "mark" in g["data"]]
    changes = [c for c in index.change_points if c.operation_type == "all"]
    assert {c.run for c in index.change_points} == {f"nightly-{STEP_AT}"}
    assert sorted((g["data"]["run"], g["data"]["metric"], g["data"]["phase"]) for g in marks) \
        == sorted((c.run, c.metric, c.phase) for c in changes)  # fmt: skip
    for c in changes:
        g = next(g for g in marks
                 if (g["data"]["metric"], g["data"]["phase"]) == (c.metric, c.phase))  # fmt: skip
        assert g["data"]["mark"] == c.direction.lower()
        pct = (c.after - c.before) / c.before * 100
        assert g["title"] == (
            f"{c.direction} at {c.run}: {LABELS[c.metric]} of db {c.phase} (all) "
            f"{fmt(c.metric, c.before)} -> {fmt(c.metric, c.after)} ({pct:+.1f}%), "
            f"p={c.pvalue:.2g}"
        )


def check_cell(cell: dict[str, Any], value: float, digits: int) -> None:
    assert float(cell["value"]) == pytest.approx(value, rel=1e-12), cell
    assert cell["text"] == f"{value:,.{digits}f}", cell


def check_tables(cells: list[dict[str, Any]], index: SeriesHistory) -> None:
    """Every number cell of every table against the index (a cell nobody checks fails)."""
    seen = set()
    changes = [c for c in cells if c["table"] == "changes"]
    assert len([c for c in changes if c["key"] == "before"]) == len(index.change_points)
    for c in index.change_points:
        mine = {x["key"]: x for x in changes if x["row"] == {
            "run": c.run, "direction": c.direction, "target": c.target, "phase": c.phase,
            "op": c.operation_type, "metric": c.metric}}  # fmt: skip
        check_cell(mine["before"], c.before, DIGITS[c.metric])
        check_cell(mine["after"], c.after, DIGITS[c.metric])
        check_cell(mine["changePercent"], (c.after - c.before) / c.before * 100, 1)
        assert mine["pvalue"]["text"] == f"{c.pvalue:.2g}"
        assert mine["endedAt"]["text"] == c.ended_at
        seen |= {id(mine[k]) for k in ("before", "after", "changePercent", "pvalue")}
    for cell in (x for x in cells if x["table"] == "runs" and x["key"] == "changePoints"):
        starting = [c for c in index.change_points if c.run == cell["row"]["run"]]
        assert cell["text"] == str(len(starting))
        seen.add(id(cell))
    for cell in (x for x in cells if x["table"] == "figures"):
        row, key = cell["row"], cell["key"]
        if key in ("run", "target", "phase"):
            continue
        line = [p for p in index.points if p.run == row["run"] and p.phase == row["phase"]
                and p.operation_type == "all"]  # fmt: skip
        if key == "repeats":
            assert cell["text"] == str(len(line))
        else:
            metric, _, end = key.partition(".")
            values = by_run(line, cast(Metric, metric))
            if not values:
                assert cell["value"] is None
                assert cell["text"] == "—"
            else:
                got = values[row["run"]]
                want = {"": sum(got) / len(got), "min": min(got), "max": max(got)}[end]
                check_cell(cell, want, DIGITS[metric])
        seen.add(id(cell))
    numeric = [x for x in cells if x["value"] is not None or x["key"] == "pvalue"]
    assert {id(x) for x in numeric} <= seen


def test_every_number_on_the_series_page_is_the_index(
    served: tuple[str, SeriesHistory], tmp_path: Path
) -> None:
    url, index = served
    with chromium(tmp_path / "profile") as driver:
        driver.get(url + "/")
        links = {
            r.get_attribute("data-run"): [a.get_attribute("href") for a in r.find_elements(
                By.CSS_SELECTOR, "[data-key=series] a")]
            for r in driver.find_elements(By.CSS_SELECTOR, "table[data-table=runs] tbody tr")
        }  # fmt: skip
        assert links == {f"{NS}/nightly-{i}": [f"{url}/series/{NS}/nightly"] for i in range(RUNS)} \
            | {f"{NS}/weekly-20": [f"{url}/series/{NS}/weekly"], f"{NS}/lone-21": []}  # fmt: skip
        series = f"table[data-table=series] tr[data-series='{NS}/nightly']"
        driver.find_element(By.CSS_SELECTOR, series).find_element(By.LINK_TEXT, "nightly").click()
        wait_for_title(driver, f"dbbench series: {NS}/nightly")
        shown = driver.execute_script(READ_DOM)
        assert console_errors(driver) == []
    check_points(shown["groups"], index)
    check_marks(shown["groups"], index)
    check_tables(shown["cells"], index)
    assert shown["counts"].startswith(
        f"{index.runs} runs, {len(index.change_points)} change points (significance "
        f"{index.significance:g}, judged from {index.min_runs} runs)."
    )
    assert index.verdict is not None
    assert shown["verdict"] == (f"Newest run {index.verdict.run}: {index.verdict.reason}: "
                                f"{index.verdict.message}")  # fmt: skip


def test_one_click_to_a_report_and_to_the_compare_view(
    served: tuple[str, SeriesHistory], tmp_path: Path
) -> None:
    url, _ = served
    page = f"{url}/series/{NS}/nightly"
    with chromium(tmp_path / "profile") as driver:
        driver.get(page)
        point = driver.find_element(
            By.CSS_SELECTOR, "g[data-point][data-run=nightly-3][data-metric=recordsPerSecond] a"
        )  # fmt: skip
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", point)
        point.click()
        wait_for_title(driver, f"dbbench report: {NS}/nightly-3")
        driver.get(page)
        # records/s: one line (load), so no other mark lies over this one
        mark = driver.find_element(By.CSS_SELECTOR, "g[data-mark][data-metric=recordsPerSecond] a")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", mark)
        mark.click()
        before, after = f"{NS}/nightly-{STEP_AT - 1}", f"{NS}/nightly-{STEP_AT}"
        wait_for_title(driver, f"dbbench compare: {before}, {after}")
        assert len(driver.find_elements(By.CSS_SELECTOR, "figure.chart svg")) == 2
        driver.get(page)
        driver.find_element(By.CSS_SELECTOR, "table[data-table=runs] tr[data-run=nightly-7] "
                            "[data-key=compare] a").click()  # fmt: skip
        wait_for_title(driver, f"dbbench compare: {NS}/nightly-6, {NS}/nightly-7")
        assert console_errors(driver) == []


def test_the_page_forbids_scripts_and_refuses_what_it_has_not(
    served: tuple[str, SeriesHistory],
) -> None:
    url, _ = served
    with urllib.request.urlopen(f"{url}/series/{NS}/nightly", timeout=60) as answer:
        policy = answer.headers["Content-Security-Policy"]
    assert policy.startswith("default-src 'none';")
    assert "script-src" not in policy
    for path, code in ((f"/series/{NS}/nightly?op=delete", 404), ("/series/Bad_Name/x", 400),
                       (f"/series/{NS}/nightly/", 404)):  # fmt: skip
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + path, timeout=60)
        assert refused.value.code == code, path
