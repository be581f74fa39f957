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
from matplotlib.ticker import EngFormatter

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
        figure, axes = plt.subplots(figsize=(8, 3.4))
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
        figure, axes = plt.subplots(figsize=(8, 3.4))
        width = 0.8 / max(len(bars), 1)
        for i, (label, values) in enumerate(bars.items()):
            positions = [g + (i - (len(bars) - 1) / 2) * width for g in range(len(groups))]
            axes.bar(positions, values, width, label=label)
        axes.set_xticks(range(len(groups)), groups)
        axes.set_title(title)
        axes.set_ylabel(ylabel)
        axes.yaxis.set_major_formatter(EngFormatter(sep=""))
        axes.legend(loc="best", fontsize=8)
        return _svg(figure)
