"""report.html: one self-contained page (inline CSS and SVG, no script, no network)."""

from __future__ import annotations

from html import escape

from dbbench_report import ending, sections
from dbbench_report.reading import Run

REPORT = "report.html"

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem auto;max-width:1200px;color:#222}
h1{font-size:1.5rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc;padding-bottom:.2rem;
margin-top:2rem}h3{font-size:1rem}table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.2rem .45rem;vertical-align:top}th{background:#f3f3f3}
td.num{text-align:right;font-variant-numeric:tabular-nums}td.na{color:#999;text-align:center}
figure.chart{margin:1rem 0}figure.chart svg{max-width:100%;height:auto}
figcaption{font-size:.8rem;color:#555}b.flag{color:#b00}nav a{margin-right:.8rem}
"""

SECTIONS = (
    ("overview", "Overview", sections.overview),
    ("ending", "How it ended", ending.section),
    ("throughput", "Throughput and latency", sections.throughput),
    ("side-by-side", "Targets side by side", sections.side_by_side),
    ("disk-reads", "Cache and disk reads", sections.disk_reads),
    ("stability", "Stability", sections.stability),
    ("latency", "Latency over time", sections.latency_over_time),
    ("storage", "Storage growth", sections.storage),
    ("repeats", "Repeats", sections.repeats),
    ("cost", "Cost", sections.cost),
    ("environment", "Environment", sections.environment),
)


def page(title: str, nav: str, body: str) -> str:
    """A self-contained page around `body` (the report's style)."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><h1>{escape(title)}</h1><nav>{nav}</nav>{body}</body></html>\n"
    )


# A run that ended before any step finished has nothing to chart.
WITHOUT_STEPS = ("overview", "ending")


def render(run: Run) -> str:
    built = [
        (key, title, build(run))
        for key, title, build in SECTIONS
        if run.steps or key in WITHOUT_STEPS
    ]
    nav = "".join(f'<a href="#{key}">{escape(title)}</a>' for key, title, html in built if html)
    title = f"dbbench report: {run.title}" + (" (failed)" if ending.failed(run) else "")
    return page(title, nav, "".join(html for _, _, html in built))
