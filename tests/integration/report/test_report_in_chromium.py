"""The report renders in headless Chromium: no console errors, titles in the DOM,
and every chart draws something (checked on a screenshot of the chart)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from selenium.webdriver.common.by import By

from dbbench_report import write_report
from tests.fixtures.result_sets import ResultSets
from tests.support.chromium import chromium, console_errors

pytestmark = pytest.mark.integration


def ink(png: bytes) -> float:
    """Share of pixels that are not (near) white."""
    image = Image.open(io.BytesIO(png)).convert("L")
    histogram = image.histogram()
    return 1 - sum(histogram[240:]) / (image.width * image.height)


def test_report_renders_without_console_errors_and_charts_draw(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    report = write_report(result_sets.baseline.path)
    with chromium(tmp_path / "profile") as driver:
        driver.get(report.as_uri())
        assert driver.title == "dbbench report: bench/baseline"
        headings = [h.text for h in driver.find_elements(By.TAG_NAME, "h2")]
        assert headings == [
            "Summary: who won each phase", "Overview", "Latency distribution",
            "p50 and p99 over time", "Throughput and latency per target and phase",
            "Targets side by side", "Cache and disk reads", "Stability", "Mean latency over time",
            "Storage growth", "Repeats: mean and spread", "Cost", "Environment",
        ]  # fmt: skip
        charts = driver.find_elements(By.CSS_SELECTOR, "figure.chart")
        assert len(charts) == 17
        svg_titles = {
            t.text for t in driver.find_elements(By.CSS_SELECTOR, "figure.chart svg text")
        }
        assert "Stability: load (records/s per window of 150 records)" in svg_titles
        assert "Storage growth: data, index and on-disk size vs records" in svg_titles
        assert "Disk reads per operation by phase and target (mean over repeats)" in svg_titles
        assert "Latency by percentile: oltp" in svg_titles
        assert "p50 and p99 per second: oltp" in svg_titles
        assert "ops/s by phase and target (mean, repeats' range)" in svg_titles
        for figure in charts:
            svg = figure.find_element(By.TAG_NAME, "svg")
            assert svg.size["width"] > 300, figure.text
            assert svg.size["height"] > 150, figure.text
            driver.execute_script("arguments[0].scrollIntoView()", svg)
            # axes, text and at least one drawn line or bar: well above a blank frame
            assert ink(svg.screenshot_as_png) > 0.03, figure.get_attribute("data-chart")
        page = driver.get_screenshot_as_png()
        assert ink(page) > 0.05
        (tmp_path / "report.png").write_bytes(page)
        assert console_errors(driver) == []


def test_a_broken_page_is_caught(tmp_path: Path) -> None:
    """The console check is live: a page that fetches from outside logs an error."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><title>x</title><img src='http://example.invalid/a.png'>")
    with chromium(tmp_path / "profile") as driver:
        driver.get(page.as_uri())
        assert console_errors(driver) != []
