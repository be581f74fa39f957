"""matplotlib on the Agg backend, in the report's style: the one module that imports it.

The chart modules (plots.py, trend.py) import this inside the functions that
draw, never at their top: matplotlib's import costs ~0.4 s of CPU, and the
CLI (`dbbench list`, `get`, `history`, `compare`) and the results service
import the report's package without drawing anything, or long before.
Text stays text (``svg.fonttype: none``) so titles and labels are in the DOM
and searchable; a fixed hash salt keeps the output of the same data identical.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import matplotlib as mpl

mpl.use("Agg")

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, MaxNLocator

_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "dbbench",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

# Milliseconds as written (0.25, not EngFormatter's "250m").
MS = FuncFormatter(lambda value, _: f"{value:g}")


@contextmanager
def chart() -> Iterator[tuple[Figure, Axes]]:
    """A 6 x 3.3 in figure in the report's style; the style holds and the figure stays
    open inside the block (call `svg` there), and the figure is closed on leaving it."""
    with mpl.rc_context(cast(Any, _STYLE)):
        figure, axes = plt.subplots(figsize=(6, 3.3))
        try:
            yield figure, axes
        finally:
            plt.close(figure)


def colours() -> list[str]:
    """The style's colour cycle (call inside `chart`)."""
    return list(plt.rcParams["axes.prop_cycle"].by_key()["color"])


def svg(figure: Figure) -> str:
    """The figure as inline SVG (call inside `chart`): no XML declaration, no DOCTYPE."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def engineering() -> EngFormatter:
    """1.2k, 3.4M: the counts' and rates' axis labels."""
    return EngFormatter(sep="")


def integer_ticks() -> MaxNLocator:
    return MaxNLocator(integer=True)


def date_axis(axes: Axes) -> None:
    """Dates on the x axis, labelled as concisely as their range allows."""
    dates: Any = mdates  # its locators and formatters are not typed
    locator = dates.AutoDateLocator(minticks=3, maxticks=7)
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))
