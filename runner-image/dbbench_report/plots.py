"""The report's charts as inline SVG (canvas.py: matplotlib on the Agg backend): no
network and no script at view time.

Each chart imports canvas.py when it draws (matplotlib loads on the first chart:
canvas.py's docstring says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dbbench_report.figures import Line

_DASHES = {"data": "-", "index": "--", "on disk": ":"}


def line_chart(
    title: str, lines: Sequence[Line], *, xlabel: str, ylabel: str, marker: bool = False
) -> str:
    from dbbench_report import canvas

    with canvas.chart() as (figure, axes):
        for line in lines:
            style = next((d for k, d in _DASHES.items() if line.label.endswith(f" {k}")), "-")
            axes.plot(
                line.x, line.y, style, label=line.label, linewidth=1.3,
                marker="." if marker or len(line.x) < 3 else None,
            )  # fmt: skip
        axes.set_title(title)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.xaxis.set_major_formatter(canvas.engineering())
        axes.yaxis.set_major_formatter(canvas.engineering())
        axes.set_ylim(bottom=0)
        if lines:
            axes.legend(loc="best", fontsize=8)
        return canvas.svg(figure)


def bar_chart(
    title: str, groups: Sequence[str], bars: Mapping[str, Sequence[float]], *, ylabel: str
) -> str:
    """Grouped bars: one group per phase, one bar per target."""
    from dbbench_report import canvas

    with canvas.chart() as (figure, axes):
        width = 0.8 / max(len(bars), 1)
        for i, (label, values) in enumerate(bars.items()):
            positions = [g + (i - (len(bars) - 1) / 2) * width for g in range(len(groups))]
            axes.bar(positions, values, width, label=label)
        axes.set_xticks(range(len(groups)), groups)
        axes.set_title(title)
        axes.set_ylabel(ylabel)
        axes.yaxis.set_major_formatter(canvas.MS if "ms" in ylabel else canvas.engineering())
        axes.legend(loc="best", fontsize=8)
        return canvas.svg(figure)


# HdrHistogram's percentile axis: x = 1 / (1 - p), labelled in percent.
_NINES = {1.0: "0%", 10.0: "90%", 100.0: "99%", 1e3: "99.9%", 1e4: "99.99%", 1e5: "99.999%",
          1e6: "99.9999%"}  # fmt: skip


_REPEAT_DASHES = ("-", "--", ":", "-.")


def percentile_chart(title: str, lines: Sequence[Line], targets: Sequence[str]) -> str:
    """Latency by percentile, log-scale percentile axis: one colour per target
    (`targets[i]` is line i's), one dash pattern per repeat of it."""
    from dbbench_report import canvas

    with canvas.chart() as (figure, axes):
        colours = canvas.colours()
        order = list(dict.fromkeys(targets))
        seen: dict[str, int] = {}
        for line, target in zip(lines, targets, strict=True):
            dash = _REPEAT_DASHES[seen.get(target, 0) % len(_REPEAT_DASHES)]
            seen[target] = seen.get(target, 0) + 1
            axes.plot(
                line.x,
                line.y,
                dash,
                label=line.label,
                linewidth=1.4,
                drawstyle="steps-post",
                color=colours[order.index(target) % len(colours)],
            )
        axes.set_xscale("log")
        axes.set_yscale("log")
        top = max((max(line.x) for line in lines if line.x), default=10.0)
        ticks = [x for x in _NINES if x <= top * 1.01]
        axes.set_xticks(ticks, [_NINES[x] for x in ticks])
        axes.minorticks_off()
        axes.yaxis.set_major_formatter(canvas.MS)
        axes.set_title(title)
        axes.set_xlabel("percentile")
        axes.set_ylabel("latency (ms)")
        if lines:
            axes.legend(loc="upper left", fontsize=8)
        return canvas.svg(figure)


def p50_p99_chart(title: str, series: Mapping[str, tuple[Line, Line]]) -> str:
    """p99 (solid) and p50 (dashed) per second, one colour per target."""
    from dbbench_report import canvas

    with canvas.chart() as (figure, axes):
        colours = canvas.colours()
        for i, (label, (p50, p99)) in enumerate(series.items()):
            colour = colours[i % len(colours)]
            dots = "." if len(p99.x) < 10 else None  # a short phase: a few seconds only
            axes.plot(p99.x, p99.y, "-", color=colour, label=f"{label} p99", linewidth=1.3,
                      marker=dots)  # fmt: skip
            axes.plot(p50.x, p50.y, "--", color=colour, label=f"{label} p50", linewidth=1.1,
                      marker=dots)  # fmt: skip
        axes.set_title(title)
        axes.set_xlabel("seconds since the phase started")
        axes.xaxis.set_major_locator(canvas.integer_ticks())
        axes.set_ylabel("latency (ms)")
        axes.yaxis.set_major_formatter(canvas.MS)
        axes.set_ylim(bottom=0)
        if series:
            axes.legend(loc="best", fontsize=7, ncol=2)
        return canvas.svg(figure)


def bar_chart_spread(
    title: str,
    groups: Sequence[str],
    bars: Mapping[str, Sequence[tuple[float, float, float]]],
    *,
    ylabel: str,
) -> str:
    """Grouped bars of (mean, min, max): the bar is the mean over repeats, the error
    bar spans the repeats' range."""
    from dbbench_report import canvas

    with canvas.chart() as (figure, axes):
        width = 0.8 / max(len(bars), 1)
        for i, (label, values) in enumerate(bars.items()):
            positions = [g + (i - (len(bars) - 1) / 2) * width for g in range(len(groups))]
            means = [m for m, _, _ in values]
            errors = [[m - lo for m, lo, _ in values], [hi - m for m, _, hi in values]]
            axes.bar(positions, means, width, label=label, yerr=errors, capsize=3,
                     error_kw={"elinewidth": 1})  # fmt: skip
        axes.set_xticks(range(len(groups)), groups)
        axes.set_title(title)
        axes.set_ylabel(ylabel)
        axes.yaxis.set_major_formatter(canvas.MS if "ms" in ylabel else canvas.engineering())
        axes.legend(loc="best", fontsize=8)
        return canvas.svg(figure)
