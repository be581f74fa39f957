"""report.html: one self-contained page (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

from html import escape

from dbbench_report import (
    ending,
    expectations,
    growth,
    latency_sections,
    node_sections,
    sections,
    shard_sections,
    verdict,
)
from dbbench_report.reading import Run

REPORT = "report.html"

_CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;padding:0 1.2rem 2rem;max-width:1400px;
color:#1f2328;font-size:14px;line-height:1.35}
h1{font-size:1.35rem;margin:.8rem 0 .3rem}h2{font-size:1.1rem;border-bottom:2px solid #d0d7de;
padding-bottom:.15rem;margin:1.4rem 0 .5rem}h3{font-size:.95rem;margin:.8rem 0 .3rem}
p{margin:.3rem 0 .5rem;max-width:75rem;color:#444}
nav:empty{display:none}
nav{position:sticky;top:0;background:#fff;padding:.35rem 0;border-bottom:1px solid #d0d7de;
z-index:1;font-size:.85rem}nav a{margin-right:.75rem;color:#0969da;text-decoration:none}
table{border-collapse:collapse;margin:.4rem 0;font-size:.8rem;display:block;overflow-x:auto;
max-width:100%}th,td{border:1px solid #d8dee4;padding:.15rem .4rem;vertical-align:top;
max-width:30rem}th{white-space:nowrap;background:#f6f8fa;font-weight:600}
tbody tr:nth-child(even){background:#fafbfc}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.na{color:#999;text-align:center}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:.4rem 1rem}
figure.chart{margin:.3rem 0}figure.chart svg{width:100%;height:auto}
figcaption{font-size:.75rem;color:#57606a}b.flag{color:#b00}
.noise.within-noise{color:#9a6700}.noise.beyond-noise{color:#1a7f37;font-weight:600}
.noise.1-repeat{color:#57606a}
b.regression{color:#cf222e}b.improvement{color:#1a7f37}
"""

SECTIONS = (
    ("summary", "Summary", verdict.summary),
    ("overview", "Overview", sections.overview),
    ("ending", "How it ended", ending.section),
    (expectations.KEY, expectations.TITLE, expectations.section_html),
    ("distribution", "Latency distribution", latency_sections.distribution),
    ("latency-time", "p50/p99 over time", latency_sections.over_time),
    ("throughput", "Throughput and latency", sections.throughput),
    ("side-by-side", "Targets side by side", sections.side_by_side),
    ("disk-reads", "Cache and disk reads", sections.disk_reads),
    ("stability", "Stability", sections.stability),
    ("growth", "Data growth", growth.section_html),
    ("latency", "Mean latency over time", sections.latency_over_time),
    ("storage", "Storage growth", sections.storage),
    (shard_sections.KEY, shard_sections.TITLE, shard_sections.section_html),
    ("repeats", "Repeats", sections.repeats),
    ("cost", "Cost", sections.cost),
    ("environment", "Environment", sections.environment),
    (node_sections.KEY, node_sections.TITLE, node_sections.section_html),
)


def page(title: str, nav: str, body: str) -> str:
    """A self-contained page around `body` (the report's style)."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><h1>{escape(title)}</h1><nav>{nav}</nav>{body}</body></html>\n"
    )


# A run that ended before any step finished has nothing to chart.
WITHOUT_STEPS = ("overview", "ending", expectations.KEY)


def render(run: Run) -> str:
    built = [
        (key, title, build(run))
        for key, title, build in SECTIONS
        if run.steps or key in WITHOUT_STEPS
    ]
    nav = "".join(f'<a href="#{key}">{escape(title)}</a>' for key, title, html in built if html)
    title = f"dbbench report: {run.title}" + (" (failed)" if ending.failed(run) else "")
    return page(title, nav, "".join(html for _, _, html in built))
