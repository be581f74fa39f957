"""The README's screenshot of a series page, from real run files:
`python -m tests.integration.results.series_screenshot docs/img`.

The claim is the one tests/integration/results/test_series_page_in_chromium.py
checks: nine runs of series bench/nightly (the merged step summaries of
tests/data/merge scaled per run, two repeats of the reads phase 3% apart),
uploaded to a real results service that indexes them, the last three at 0.6
of the speed (a step Otava finds at nightly-6), plus a run of another series
and one without a series. Headless Chromium shoots the results browser's
/series/bench/nightly. About a minute.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from dbbench_local.results_service import ResultsService, running_results_service
from tests.integration.report.screenshots import shoot
from tests.support.browser_server import browser_server
from tests.support.chromium import chromium
from tests.support.series_runs import VIEW_REPORTS, upload

NS = "bench"
RUNS = 9
STEP_AT = 6  # the first run at 0.6 of the speed
SERIES_HEIGHT = 1500  # px: the summary and the first charts


def series_claim(service: ResultsService, source: Path) -> None:
    rng = np.random.default_rng(11)
    for i in range(RUNS):
        speed = (1.0 if i < STEP_AT else 0.6) * (1 + 0.02 * float(rng.standard_normal()))
        upload(service, source, NS, i, speed, repeats=2)
    upload(service, source, NS, 20, 1.0, series="weekly")
    upload(service, source, NS, 21, 1.0, series=None)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dbbench-series-shot-") as scratch:
        base = Path(scratch)
        with running_results_service(base / "service", extra_args=VIEW_REPORTS) as service:
            series_claim(service, base / "source")
            with browser_server(service.root, base / "browser.log") as url, \
                    chromium(base / "profile") as driver:  # fmt: skip
                shoot(driver, f"{url}/series/{NS}/nightly", out / "series.png", SERIES_HEIGHT)
    print(f"wrote {out / 'series.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img"))
