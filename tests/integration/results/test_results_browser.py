"""The results browser, a real server, seen through headless Chromium and plain
HTTP: the index lists runs with their status, a report opens, traversal and
writes are refused."""

from __future__ import annotations

import http.client
import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.by import By

from tests.fixtures.result_sets import ResultSets
from tests.integration.cli.test_compare import _by_hand
from tests.support.browser_server import browser_server
from tests.support.chromium import chromium, console_errors, wait_for_title
from tests.support.pages import parse

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def claim(result_sets: ResultSets, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two finished runs plus one still running (no run summary yet)."""
    root = tmp_path_factory.mktemp("browse") / "claim"
    shutil.copytree(result_sets.root, root)
    running = root / "bench" / "running" / "0b7e1c2a-0000-4000-8000-000000000003"
    shutil.copytree(result_sets.baseline.path / "safe" / "load", running / "safe" / "load")
    # A secret next to the claim: what a traversal would try to read.
    (root.parent / "secret.txt").write_text("not for browsers")
    return root


@pytest.fixture(scope="module")
def url(claim: Path) -> Iterator[str]:
    with browser_server(claim, claim.parent / "browser.log") as base:
        yield base


def raw_request(url: str, method: str, path: str) -> tuple[int, str]:
    """A request with the path sent exactly as given (no client-side normalisation)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        connection.putheader("Content-Length", "0")
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, answer.read().decode(errors="replace")
    finally:
        connection.close()


def test_index_lists_runs_and_a_report_opens(url: str, tmp_path: Path) -> None:
    with chromium(tmp_path / "profile") as driver:
        driver.get(url + "/")
        assert driver.title == "dbbench results"
        found = driver.find_elements(By.CSS_SELECTOR, "table[data-table=runs] tbody tr")
        rows = {r.get_attribute("data-run"): r for r in found}
        assert set(rows) == {"bench/baseline", "bench/candidate", "bench/running"}
        status = rows["bench/baseline"].find_element(By.CSS_SELECTOR, "[data-key=status]")
        assert status.text == "finished"
        assert "10 / 10" in rows["bench/baseline"].text
        running = rows["bench/running"].find_element(By.CSS_SELECTOR, "[data-key=status]")
        assert running.text == "in progress"
        rows["bench/baseline"].find_element(By.LINK_TEXT, "baseline").click()
        wait_for_title(driver, "dbbench report: bench/baseline")
        assert len(driver.find_elements(By.CSS_SELECTOR, "figure.chart svg")) == 17
        assert console_errors(driver) == []


def test_path_traversal_is_refused(url: str) -> None:
    run = "/runs/bench/baseline/0b7e1c2a-0000-4000-8000-000000000001"
    for path in (
        f"{run}/files/../../../../secret.txt",
        f"{run}/files/%2e%2e/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        "/runs/bench/baseline/..%2f..%2f..%2fsecret.txt/",
        "/runs/../../secret.txt/",
        f"{run}/files/safe/load/1/.hidden",
    ):
        status, body = raw_request(url, "GET", path)
        assert status in (400, 404), (path, status)
        assert "not for browsers" not in body


def test_no_write_endpoints(url: str, claim: Path) -> None:
    before = sorted(p.relative_to(claim) for p in claim.rglob("*"))
    for method in ("PUT", "POST", "DELETE", "PATCH"):
        status, _ = raw_request(url, method, "/runs/bench/baseline/x/files/summary.json")
        assert status == 405
    assert sorted(p.relative_to(claim) for p in claim.rglob("*")) == before


def test_files_and_listing_serve_what_is_on_the_claim(url: str, result_sets: ResultSets) -> None:
    prefix = "bench/baseline/0b7e1c2a-0000-4000-8000-000000000001"
    with urllib.request.urlopen(f"{url}/api/runs/{prefix}/files", timeout=30) as answer:
        files = json.loads(answer.read())
    assert "summary.json" in files
    assert "safe/oltp/2/histograms/read.hlog" in files
    with urllib.request.urlopen(f"{url}/runs/{prefix}/files/safe/oltp/2/summary.json") as answer:
        served = answer.read()
    assert served == (result_sets.baseline.path / "safe/oltp/2/summary.json").read_bytes()


def test_ticked_runs_are_compared_in_the_browser(
    url: str, tmp_path: Path, result_sets: ResultSets
) -> None:
    """Tick two finished runs on the index, press Compare: dbbench compare's page,
    its numbers the step summaries' means (as `dbbench compare` prints them)."""
    with chromium(tmp_path / "profile") as driver:
        driver.get(url + "/")
        found = driver.find_elements(By.CSS_SELECTOR, "table[data-table=runs] tbody tr")
        rows = {r.get_attribute("data-run"): r for r in found}
        assert rows["bench/running"].find_elements(By.CSS_SELECTOR, "input") == []
        for name in ("bench/baseline", "bench/candidate"):
            rows[name].find_element(By.CSS_SELECTOR, "input[name=run]").click()
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for_title(driver, "dbbench compare: bench/baseline, bench/candidate")
        html = driver.page_source
        assert len(driver.find_elements(By.CSS_SELECTOR, "figure.chart svg")) == 2
        assert console_errors(driver) == []
    page = parse(html)
    for name, run_dir in (("bench/baseline", result_sets.baseline.path),
                          ("bench/candidate", result_sets.candidate.path)):  # fmt: skip
        rates, p99s = _by_hand(run_dir, "fast", "oltp")
        mix = [c for c in page.cells if c.table == "compare" and c.row.get("target") == "fast"
               and c.row.get("workload", "").startswith("mix")]  # fmt: skip
        ops = next(c for c in mix if c.key == f"throughput.{name}")
        p99 = next(c for c in mix if c.key == f"p99.{name}")
        assert float(ops.value or "nan") == pytest.approx(sum(rates) / len(rates), rel=1e-12)
        assert float(p99.value or "nan") == pytest.approx(sum(p99s) / len(p99s), rel=1e-12)


def test_compare_needs_two_runs_inside_the_root(url: str) -> None:
    one = "/compare?run=bench/baseline/0b7e1c2a-0000-4000-8000-000000000001"
    status, body = raw_request(url, "GET", one)
    assert status == 404
    assert "two or more runs" in body
    status, _ = raw_request(url, "GET", "/compare?run=../../x&run=bench/baseline/y")
    assert status in (400, 404)
