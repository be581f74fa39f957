"""Charts as inline SVG (matplotlib, Agg backend): no network and no script at view time.

Text stays text (``svg.fonttype: none``) so titles and labels are in the DOM
and searchable; a fixed hash salt keeps the output of the same data identical.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, cast

import matplotlib as mpl

mpl.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, MaxNLocator

from dbbench_report.figures import Line

_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "dbbench",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_DASHES = {"data": "-", "index": "--", "on disk": ":"}


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE (inline SVG)


def line_chart(
    title: str, lines: Sequence[Line], *, xlabel: str, ylabel: str, marker: bool = False
) -> str:
    with mpl.rc_context(cast(Any, _STYLE)):
        figure, axes = plt.subplots(figsize=(6, 3.3))
        for line in lines:
            style = next((d for k, d in _DASHES.items() if line.label.endswith(f" {k}")), "-")
            axes.plot(
                line.x, line.y, style, label=line.label, linewidth=1.3,
                marker="." if marker or len(line.x) < 3 else None,
            )  # fmt: skip
        axes.set_title(title)
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)
        axes.xaxis.set_major_formatter(EngFormatter(sep=""))
        axes.yaxis.set_major_formatter(EngFormatter(sep=""))
        axes.set_ylim(bottom=0)
        if lines:
            axes.legend(loc="best", fontsize=8)
        return _svg(figure)


def bar_chart(
    title: str, groups: Sequence[str], bars: Mapping[str, Sequence[float]], *, ylabel: str
) -> str:
    """Grouped bars: one group per phase, one bar per target."""
    with mpl.rc_context(cast(Any, _STYLE)):
        figure, axes = plt.subplots(figsize=(6, 3.3))
        width = 0.8 / max(len(bars), 1)
        for i, (label, values) in enumerate(bars.items()):
            positions = [g + (i - (len(bars) - 1) / 2) * width for g in range(len(groups))]
            axes.bar(positions, values, width, label=label)
        axes.set_xticks(range(len(groups)), groups)
        axes.set_title(title)
        axes.set_ylabel(ylabel)
        axes.yaxis.set_major_formatter(_MS if "ms" in ylabel else EngFormatter(sep=""))
        axes.legend(loc="best", fontsize=8)
        return _svg(figure)


# HdrHistogram's percentile axis: x = 1 / (1 - p), labelled in percent.
_NINES = {1.0: "0%", 10.0: "90%", 100.0: "99%", 1e3: "99.9%", 1e4: "99.99%", 1e5: "99.999%",
          1e6: "99.9999%"}  # fmt: skip


# Milliseconds as written (0.25, not EngFormatter's "250m").
_MS = FuncFormatter(lambda value, _: f"{value:g}")
_REPEAT_DASHES = ("-", "--", ":", "-.")


def percentile_chart(title: str, lines: Sequence[Line], targets: Sequence[str]) -> str:
    """Latency by percentile, log-scale percentile axis: one colour per target
    (`targets[i]` is line i's), one dash pattern per repeat of it."""
    with mpl.rc_context(cast(Any, _STYLE)):
        figure, axes = plt.subplots(figsize=(6, 3.3))
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
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
        axes.yaxis.set_major_formatter(_MS)
        axes.set_title(title)
        axes.set_xlabel("percentile")
        axes.set_ylabel("latency (ms)")
        if lines:
            axes.legend(loc="upper left", fontsize=8)
        return _svg(figure)


def p50_p99_chart(title: str, series: Mapping[str, tuple[Line, Line]]) -> str:
    """p99 (solid) and p50 (dashed) per second, one colour per target."""
    with mpl.rc_context(cast(Any, _STYLE)):
        figure, axes = plt.subplots(figsize=(6, 3.3))
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, (label, (p50, p99)) in enumerate(series.items()):
            colour = colours[i % len(colours)]
            dots = "." if len(p99.x) < 10 else None  # a short phase: a few seconds only
            axes.plot(p99.x, p99.y, "-", color=colour, label=f"{label} p99", linewidth=1.3,
                      marker=dots)  # fmt: skip
            axes.plot(p50.x, p50.y, "--", color=colour, label=f"{label} p50", linewidth=1.1,
                      marker=dots)  # fmt: skip
        axes.set_title(title)
        axes.set_xlabel("seconds since the phase started")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_ylabel("latency (ms)")
        axes.yaxis.set_major_formatter(_MS)
        axes.set_ylim(bottom=0)
        if series:
            axes.legend(loc="best", fontsize=7, ncol=2)
        return _svg(figure)


def bar_chart_spread(
    title: str,
    groups: Sequence[str],
    bars: Mapping[str, Sequence[tuple[float, float, float]]],
    *,
    ylabel: str,
) -> str:
    """Grouped bars of (mean, min, max): the bar is the mean over repeats, the error
    bar spans the repeats' range."""
    with mpl.rc_context(cast(Any, _STYLE)):
        figure, axes = plt.subplots(figsize=(6, 3.3))
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
        axes.yaxis.set_major_formatter(_MS if "ms" in ylabel else EngFormatter(sep=""))
        axes.legend(loc="best", fontsize=8)
        return _svg(figure)
