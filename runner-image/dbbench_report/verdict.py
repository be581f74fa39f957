"""The summary at the top of the report (pure): per phase, which target had the
most throughput and the lowest p99, by how much, and whether that is within
the noise of the repeats.

"Within noise" as in `dbbench compare`: both targets repeated the phase and
the ranges (min..max) of their repeats overlap, so the targets differ less
than one target differs from itself. With one repeat there is nothing to
judge the noise by, and the summary says so. A phase a growth measures ran
on a table of another size in each part: its repeats' range is the growth's
effect, not noise, and the summary points to the Data growth section instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from dbbench_report import plots
from dbbench_report.cells import num, raw, row, table, text
from dbbench_report.figures import Spread, latency, throughput
from dbbench_report.growth import grown_phases
from dbbench_report.reading import Run
from dbbench_report.sections import chart, section


@dataclass(frozen=True)
class Verdict:
    phase: str
    figure: str  # "throughput" (higher wins) or "p99" (lower wins)
    winner: str
    runner_up: str | None
    best: Spread
    next: Spread | None
    # Measured by a growth: its repeats ran at different table sizes.
    grown: bool = False

    @property
    def margin_percent(self) -> float | None:
        """How much better the winner is than the runner-up, in percent of the runner-up."""
        if self.next is None or self.next.mean == 0:
            return None
        return abs(self.best.mean - self.next.mean) / self.next.mean * 100.0

    @property
    def noise(self) -> str:
        if self.next is None:
            return "one target"
        if self.grown:
            return "grows: see Data growth"
        if self.best.n < 2 or self.next.n < 2:
            return "1 repeat: noise unknown"
        overlap = self.best.low <= self.next.high and self.next.low <= self.best.high
        return "within noise" if overlap else "beyond noise"


def verdicts(run: Run) -> list[Verdict]:
    found = []
    grown = set(grown_phases(run))
    for phase in run.phase_names():
        targets = [t for t in run.target_names() if run.steps_of(t, phase)]
        if not targets:
            continue
        for figure in ("throughput", "p99"):

            def spread(target: str, figure: str = figure, phase: str = phase) -> Spread:
                if figure == "throughput":
                    return throughput(run, target, phase)
                return latency(run, target, phase, "p99")

            ranked = sorted(targets, key=lambda t: spread(t).mean,
                            reverse=figure == "throughput")  # fmt: skip
            second = ranked[1] if len(ranked) > 1 else None
            found.append(Verdict(phase, figure, ranked[0], second, spread(ranked[0]),
                                 None if second is None else spread(second),
                                 phase in grown))  # fmt: skip
    return found


def _sentence(v: Verdict) -> str:
    what = "throughput" if v.figure == "throughput" else "p99 latency"
    if v.runner_up is None:
        return f"{escape(v.winner)} only"
    better = "more" if v.figure == "throughput" else "lower"
    margin = v.margin_percent
    by = "" if margin is None else f" {margin:.1f}% {better} {what} than {escape(v.runner_up)}"
    return f"<b>{escape(v.winner)}</b>{by}"


def summary(run: Run) -> str:
    rows = []
    for v in verdicts(run):
        unit = 1 if v.figure == "throughput" else 3
        rows.append(row(
            [text(v.phase), text("ops/s" if v.figure == "throughput" else "p99 (ms)"),
             text(v.winner, "winner"), num("best", v.best.mean, unit),
             text(v.runner_up, "runnerUp"),
             num("next", None if v.next is None else v.next.mean, unit),
             num("marginPercent", v.margin_percent, 1),
             raw(f'<span class="noise {v.noise.split(":")[0].replace(" ", "-")}">'
                 f"{escape(v.noise)}</span>", "noise"),
             raw(_sentence(v), "sentence")],
            {"phase": v.phase, "figure": v.figure},
        ))  # fmt: skip
    headers = ["phase", "figure", "best", "its mean", "next", "its mean", "margin (%)",
               "noise", "in words"]  # fmt: skip
    body = (
        "<p>Means over repeats. <i>Within noise</i>: the targets' repeats overlap "
        "(min..max), the difference is not shown to be real; error bars span the "
        "repeats.</p>" + table("verdict", headers, rows)
    )
    targets, phases = run.target_names(), run.phase_names()
    if len(targets) > 1 or any(throughput(run, t, p).n > 1 for t in targets for p in phases):
        charts = []
        for figure, ylabel in (("throughput", "ops/s"), ("p99", "p99 (ms)")):
            bars = {}
            for t in targets:
                spreads = [throughput(run, t, p) if figure == "throughput"
                           else latency(run, t, p, "p99") for p in phases]  # fmt: skip
                bars[t] = [(s.mean, s.low, s.high) for s in spreads]
            title = f"{ylabel} by phase and target (mean, repeats' range)"
            charts.append(chart(f"summary-{figure}", title,
                                plots.bar_chart_spread(title, phases, bars, ylabel=ylabel),
                                len(targets)))  # fmt: skip
        body += f'<div class="charts">{"".join(charts)}</div>'
    return section("summary", "Summary: who won each phase", body)
