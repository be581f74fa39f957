"""A metric over a series' runs as inline SVG (matplotlib, the report's style): one
line per target and phase, the repeats' range shaded, change points marked.

Each point and mark is its own artist with an id, so the SVG carries a link
(matplotlib's ``url``: an ``<a xlink:href>`` around the marker) and, added
after rendering, a ``<title>`` (the browser's native tooltip: no script) and
``data-`` attributes naming its run, which tests and readers can find.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Literal

MarkKind = Literal["regression", "improvement"]
# Regressions red and pointing down, improvements green and pointing up: told
# apart by shape as well as colour.
_MARKS: dict[MarkKind, tuple[str, str]] = {"regression": ("v", "#cf222e"),
                                           "improvement": ("^", "#1a7f37")}  # fmt: skip


@dataclass(frozen=True)
class TrendPoint:
    """One run's value on a line: its repeats' mean and range."""

    x: datetime
    mean: float
    low: float
    high: float
    href: str
    tooltip: str
    attrs: Mapping[str, str]


@dataclass(frozen=True)
class TrendLine:
    label: str
    points: tuple[TrendPoint, ...]


@dataclass(frozen=True)
class Mark:
    """A change point: drawn on point `point` of line `line`."""

    line: int
    point: int
    kind: MarkKind
    href: str
    tooltip: str
    attrs: Mapping[str, str]


def _days(moment: datetime) -> float:
    """Matplotlib's date axis unit: days since its epoch, 1970-01-01 UTC (the default)."""
    return moment.timestamp() / 86400.0


def _annotate(svg: str, key: str, tips: Mapping[str, tuple[str, Mapping[str, str]]]) -> str:
    """Each of our artists' groups gets its tooltip and data attributes, in one pass
    (a series' chart holds a group per run and line)."""

    def opening(match: re.Match[str]) -> str:
        gid = match[1]
        tooltip, attrs = tips[gid]
        extra = "".join(f' data-{k}="{escape(v)}"' for k, v in attrs.items())
        return f'<g id="{gid}"{extra}><title>{escape(tooltip)}</title>'

    annotated, found = re.subn(rf'<g id="({re.escape(key)}-(?:l\d+-p|m)\d+)">', opening, svg)
    assert found == len(tips), (key, found, len(tips))
    return annotated


def trend_chart(
    key: str, title: str, lines: Sequence[TrendLine], marks: Sequence[Mark], *, ms: bool
) -> str:
    """`key` prefixes the artists' ids (unique on the page: [a-z0-9-])."""
    from dbbench_report import canvas

    tips: dict[str, tuple[str, Mapping[str, str]]] = {}
    with canvas.chart() as (figure, axes):
        colours = canvas.colours()
        for i, line in enumerate(lines):
            colour = colours[i % len(colours)]
            xs = [_days(p.x) for p in line.points]
            axes.plot(xs, [p.mean for p in line.points], "-", color=colour, label=line.label,
                      linewidth=1.3)  # fmt: skip
            if any(p.high > p.low for p in line.points):
                axes.fill_between(xs, [p.low for p in line.points], [p.high for p in line.points],
                                  color=colour, alpha=0.18, linewidth=0)  # fmt: skip
            for j, point in enumerate(line.points):
                gid = f"{key}-l{i}-p{j}"
                axes.plot([_days(point.x)], [point.mean], "o", color=colour, markersize=3.5,
                          url=point.href, gid=gid)  # fmt: skip
                tips[gid] = (point.tooltip, {"point": "", **point.attrs})
        for k, mark in enumerate(marks):
            point = lines[mark.line].points[mark.point]
            shape, colour = _MARKS[mark.kind]
            gid = f"{key}-m{k}"
            axes.plot([_days(point.x)], [point.mean], shape, color=colour, markersize=9,
                      markeredgecolor="white", zorder=5, url=mark.href, gid=gid)  # fmt: skip
            tips[gid] = (mark.tooltip, {"mark": mark.kind, **mark.attrs})
        for kind in dict.fromkeys(m.kind for m in marks):  # legend entries for the marks
            shape, colour = _MARKS[kind]
            axes.plot([], [], shape, color=colour, markersize=7, label=kind)
        axes.set_title(title)
        axes.set_ylabel(title.split(" over ", 1)[0])
        canvas.date_axis(axes)
        axes.yaxis.set_major_formatter(canvas.MS if ms else canvas.engineering())
        axes.set_ylim(bottom=0)
        if lines:
            axes.legend(loc="best", fontsize=7)
        svg = canvas.svg(figure)
    # Links open in place, as every other link of the browser (matplotlib adds a target).
    svg = svg.replace(' target="_blank"', "")
    return _annotate(svg, key, tips)
