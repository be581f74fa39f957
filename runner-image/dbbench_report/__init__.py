"""HTML reports and comparisons of finished runs, from the files on the results claim."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dbbench_report.reading import ResultsError, Run, read_run
from dbbench_report.rendering import REPORT, render

__all__ = ["REPORT", "ResultsError", "Run", "read_run", "render", "write_report"]


def write_report(run_dir: Path) -> Path:
    """Render `run_dir`'s report.html next to its results (atomically); its path."""
    html = render(read_run(run_dir))
    target = Path(run_dir) / REPORT
    fd, temp = tempfile.mkstemp(dir=run_dir, prefix=f".{REPORT}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(html)
        Path(temp).chmod(0o644)  # mkstemp makes it 0600; reports are for every reader
        Path(temp).replace(target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target
