"""report.html next to a run's results, written when the run's summary.json arrives.

The operator uploads the run's summary.json last, when every step is merged; the
report is rendered then, in the background (it takes a few seconds of CPU and the
upload is already acknowledged). A report that cannot be rendered is logged and
left out: the results are complete without it, and the browser and
`dbbench report` can render it again.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path, PurePosixPath

from dbbench_contract.layout import SUMMARY

RUN_SUMMARY = PurePosixPath(SUMMARY)
log = logging.getLogger(__name__)


def is_run_summary(path: PurePosixPath) -> bool:
    return path == RUN_SUMMARY


def render_report(run_dir: Path) -> None:
    try:
        from dbbench_report import write_report  # noqa: PLC0415 - matplotlib loads on first use

        path = write_report(run_dir)
    except Exception:  # a report is a convenience; never fail the upload for it
        log.exception("report for %s not written", run_dir)
        return
    log.info("wrote %s", path)


def render_in_background(run_dir: Path) -> threading.Thread:
    thread = threading.Thread(target=render_report, args=(run_dir,), daemon=True)
    thread.start()
    return thread
