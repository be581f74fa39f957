"""The report's latency sections: the percentile distribution per phase (targets
overlaid) and p50/p99 per second, from the steps' interval logs (latencies)."""

from __future__ import annotations

from dbbench_report import plots
from dbbench_report.cells import num, row, table, text
from dbbench_report.figures import Line
from dbbench_report.latencies import TABLE_PERCENTILES, StepLatency, step_latency
from dbbench_report.reading import Run, Step
from dbbench_report.sections import chart, section

_LABELS = {50.0: "p50", 90.0: "p90", 99.0: "p99", 99.9: "p99.9", 99.99: "p99.99", 100.0: "max"}


def _measured(run: Run, phase: str) -> list[tuple[Step, StepLatency]]:
    found = []
    for target in run.target_names():
        for step in sorted(run.steps_of(target, phase), key=lambda s: s.repeat):
            latency = step_latency(run.path, step)
            if latency is not None and latency.total.get_total_count():
                found.append((step, latency))
    return found


def _label(step: Step, run: Run) -> str:
    repeats = max((s.repeat for s in run.steps_of(phase=step.phase)), default=1)
    return step.target if repeats == 1 else f"{step.target} r{step.repeat}"


def distribution(run: Run) -> str:
    intro = (
        "<p>Latency against percentile, HdrHistogram-style: the x axis counts nines "
        "(90%, 99%, 99.9%...), so the tail is as wide as the median. Every operation of the "
        "phase (all types, all runner pods, warm-up excluded), one line per target and "
        "repeat, from the step's <code>histograms/*.hlog</code>.</p>"
    )
    parts, rows = [], []
    for phase in run.phase_names():
        measured = _measured(run, phase)
        if not measured:
            continue
        lines, targets = [], []
        for step, latency in measured:
            targets.append(step.target)
            x, y = latency.curve()
            lines.append(Line(_label(step, run), x, y))
            rows.append(row(
                [text(step.target), text(phase), text(step.repeat),
                 num("count", latency.total.get_total_count()),
                 *(num(f"ms.{_LABELS[p]}", latency.ms_at(p), 3) for p in TABLE_PERCENTILES)],
                {"target": step.target, "phase": phase, "repeat": step.repeat},
            ))  # fmt: skip
        title = f"Latency by percentile: {phase}"
        parts.append(chart(f"distribution-{phase}", title,
                           plots.percentile_chart(title, lines, targets), len(lines)))  # fmt: skip
    if not parts:
        return ""
    headers = ["target", "phase", "repeat", "operations",
               *(f"{_LABELS[p]} (ms)" for p in TABLE_PERCENTILES)]  # fmt: skip
    body = intro + f'<div class="charts">{"".join(parts)}</div>'
    return section("distribution", "Latency distribution", body + table(
        "distribution", headers, rows))  # fmt: skip


def over_time(run: Run) -> str:
    parts = []
    repeated = False
    for phase in run.phase_names():
        series: dict[str, tuple[Line, Line]] = {}
        for step, latency in _measured(run, phase):
            if step.repeat != 1 or not latency.seconds:
                repeated = repeated or step.repeat != 1
                continue
            lines = []
            for percentile in (50.0, 99.0):
                seconds, ms = latency.per_second(percentile)
                start = seconds[0]
                lines.append(Line(step.target, tuple(float(s - start) for s in seconds), ms))
            series[step.target] = (lines[0], lines[1])
        if series:
            title = f"p50 and p99 per second: {phase}"
            svg = plots.p50_p99_chart(title, series)
            parts.append(chart(f"p99-{phase}", title, svg, 2 * len(series)))
    if not parts:
        return ""
    note = (
        "<p>Each second's p50 (dashed) and p99 (solid) over every operation of the phase, "
        "exact across runner pods (their per-second histograms added)"
        + ("; repeat 1 of each target" if repeated else "")
        + ".</p>"
    )
    return section(
        "latency-time",
        "p50 and p99 over time",
        note + f'<div class="charts">{"".join(parts)}</div>',
    )
