"""How the run ended, when it did not simply succeed: the reason, and each planned
step without results with why (pure HTML, like the other sections).

The operator writes a failed or timed-out run's summary.json too (docs/results.md):
`run.phase`, `run.reason` and `run.message` say how it ended, `run.currentStep`
which step it was at; steps without a `result` never finished.
"""

from __future__ import annotations

from dbbench_contract.run_summary import StepEntry
from dbbench_report.cells import row, table, text
from dbbench_report.reading import Run


def failed(run: Run) -> bool:
    return run.meta.phase == "Failed"


def why_missing(run: Run, entry: StepEntry) -> str:
    """Why one planned step has no results (pure)."""
    at = run.meta.current_step
    ended = f"{run.meta.reason or 'Failed'}: {run.meta.message or 'see the run'}"
    if not failed(run):
        return "no results recorded"
    if at is None or entry.step == at:
        return f"running when the run ended ({ended})"
    if entry.step > at:
        return f"not started: the run ended at step {at}"
    return "ended without results: its runner pods did not upload them"


def _missing_row(run: Run, entry: StepEntry) -> str:
    cells = [text(entry.step), text(entry.target), text(entry.phase), text(entry.repeat),
             text(entry.path), text(why_missing(run, entry), "why")]  # fmt: skip
    return row(cells, {"step": entry.step, "path": entry.path})


def section(run: Run) -> str:
    """The "ended" section; empty for a run that succeeded with every step."""
    if not failed(run) and not run.missing:
        return ""
    meta = run.meta
    summary = [
        row([text("outcome"), text(meta.phase or "unknown", "phase")]),
        row([text("reason"), text(meta.reason, "reason")]),
        row([text("message"), text(meta.message, "message")]),
        row([text("steps with results"), text(
            f"{len(run.steps)} of {len(run.summary.steps)}", "completed")]),
    ]  # fmt: skip
    missing = [_missing_row(run, e) for e in run.summary.steps if e.result is None]
    title = "Run failed" if failed(run) else "Steps without results"
    body = table("ending", ["", ""], summary)
    if missing:
        body += "<h3>Steps without results</h3>" + table(
            "missing", ["step", "target", "phase", "repeat", "path", "why"], missing
        )
    return f'<section id="ending" data-section="ending"><h2>{title}</h2>{body}</section>'
