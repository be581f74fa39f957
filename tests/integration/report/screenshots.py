"""The README's screenshots, from real runs:
`python -m tests.integration.report.screenshots docs/img`.

Two MariaDB servers (durability safe vs fast, as the report tests' fixture),
two runs of a longer insert + mix + query benchmark (2 runner threads in 1 and
in 2 worker processes: the same workload, so compare lines them up; 2 repeats
each, 5-15 s phases so that p50/p99 per second has a line to draw),
then headless Chromium takes report.png (the top of the two-target run's
report: summary, distribution, p50/p99 over time) and compare.png (the
browser's compare view of both runs). About ten minutes on 2 cores.
"""

from __future__ import annotations

import base64
import sys
import tempfile
from pathlib import Path
from typing import Any

from dbbench_local.mariadb import MariaDBServer, start_mariadb
from dbbench_report import write_report
from tests.fixtures.result_sets import PROFILES
from tests.support.browser_server import browser_server
from tests.support.chromium import chromium
from tests.support.generate import generate_run, small_spec

REPORT_HEIGHT = 3420  # px of the report's top: summary, distribution, p50/p99 over time


def longer(processes: int) -> dict[str, Any]:
    spec = small_spec(threads=2, repeats=2, price=0.5, processes=processes)
    spec["dataset"]["records"] = 20_000
    for phase in spec["phases"]:
        phase["reportEvery"] = 1000
        if phase["type"] == "mix":
            phase["operations"] = 60_000
        if phase["type"] == "query":
            phase["operations"] = 20_000
    return spec


def shoot(driver: Any, url: str, out: Path, height: int | None = None) -> None:
    """The page from its top, `height` CSS px of it at most (all of it by default),
    through Chrome's own capture (no window resizing, no scrollbar)."""
    driver.set_window_size(1400, 1000)
    driver.get(url)
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": 1400, "scale": 1,
            "height": min(int(size["height"]), height or int(size["height"]))}  # fmt: skip
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    out.write_bytes(base64.b64decode(shot["data"]))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dbbench-shots-") as scratch:
        base = Path(scratch)
        servers: dict[str, MariaDBServer] = {}
        try:
            for i, (name, args) in enumerate(PROFILES.items()):
                servers[name] = start_mariadb(base / f"mariadb-{name}", server_id=i + 1,
                                              extra_args=args)  # fmt: skip
            root, work = base / "claim", base / "work"
            first = generate_run(root, work, "two-targets", "5c7e1c2a-0000-4000-8000-000000000001",
                                 servers, longer(processes=1))  # fmt: skip
            generate_run(root, work, "two-processes", "5c7e1c2a-0000-4000-8000-000000000002",
                         servers, longer(processes=2))  # fmt: skip
        finally:
            for server in servers.values():
                server.stop()
        report = write_report(first.path)
        with chromium(base / "profile") as driver:
            shoot(driver, report.as_uri(), out / "report.png", REPORT_HEIGHT)
            with browser_server(root, base / "browser.log") as url:
                runs = "&".join(f"run=bench/{n}/5c7e1c2a-0000-4000-8000-00000000000{i}"
                                for i, n in ((1, "two-targets"), (2, "two-processes")))  # fmt: skip
                shoot(driver, f"{url}/compare?{runs}", out / "compare.png")
    print(f"wrote {out / 'report.png'} and {out / 'compare.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img"))
