"""report.html next to a run's results, written when the run's summary.json arrives.

The operator uploads the run's summary.json last, when every step is merged; the
report is rendered then, in the background (it takes a few seconds of CPU and the
upload is already acknowledged). A report that cannot be rendered is logged and
left out: the results are complete without it, and the browser and
`dbbench report` can render it again.

At shutdown the report being drawn is finished (it is written atomically
either way) and the queued ones are dropped, each named in the log: a SIGTERM
is answered in the time of one report, not of a backlog (a schedule's series
can queue dozens), which a pod's 30 s grace would cut short anyway.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from dbbench_contract.layout import SUMMARY
from dbbench_report import write_report

RUN_SUMMARY = PurePosixPath(SUMMARY)
log = logging.getLogger(__name__)


def is_run_summary(path: PurePosixPath) -> bool:
    return path == RUN_SUMMARY


def render_report(run_dir: Path) -> None:
    try:
        path = write_report(run_dir)
    except Exception:  # a report is a convenience; never fail the upload for it
        log.exception("report for %s not written", run_dir)
        return
    log.info("wrote %s", path)


# One report at a time: each takes a core for seconds and matplotlib's memory;
# uploads of many run summaries at once queue here instead of starting threads.
_renderer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="report")
_stopping = threading.Event()


def _render_unless_stopping(run_dir: Path) -> None:
    if _stopping.is_set():
        log.info("report for %s not rendered: the service stopped first", run_dir)
        return
    render_report(run_dir)


def render_in_background(run_dir: Path) -> Future[None]:
    return _renderer.submit(_render_unless_stopping, run_dir)


def stop_rendering() -> None:
    """Finish the report being drawn; the queued ones only log that they were dropped."""
    _stopping.set()
    _renderer.shutdown(wait=True)
