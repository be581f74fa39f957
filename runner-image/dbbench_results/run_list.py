"""The results browser's index: every run on the claim with its status (and its
series, when it has one), and the series those runs make up."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import quote

from pydantic import ValidationError

from dbbench_contract.layout import POD_PREFIX, SUMMARY
from dbbench_contract.run_summary import RunSummary
from dbbench_results.paths import PathRefusedError, RunId


@dataclass(frozen=True)
class RunEntry:
    namespace: str
    name: str
    uid: str
    status: str
    steps_done: int
    steps_total: int | None
    completed: str | None
    # The run's dbbench.io/series label when it ended (its summary's `series`).
    series: str | None = None

    @property
    def href(self) -> str:
        return f"/runs/{self.namespace}/{self.name}/{self.uid}/"


def series_href(namespace: str, series: str) -> str:
    """Relative, as the compare form's action: it works behind the API server's proxy."""
    return f"series/{quote(namespace)}/{quote(series)}"


def _steps_done(run_dir: Path) -> int:
    return sum(
        1 for p in run_dir.glob(f"*/*/*/{SUMMARY}") if not p.parent.name.startswith(POD_PREFIX)
    )


def _read_run_summary(path: Path) -> RunSummary | None:
    try:
        return RunSummary.from_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def _entry(run: RunId, run_dir: Path) -> RunEntry:
    summary = _read_run_summary(run_dir / SUMMARY)
    if summary is None:
        return RunEntry(run.namespace, run.name, run.uid, "in progress",
                        _steps_done(run_dir), None, None)  # fmt: skip
    results = [s.result for s in summary.steps]
    failed = [r for r in results if r is None or r.status != "succeeded"]
    status = "finished" if not failed else f"finished, {len(failed)} step(s) not succeeded"
    if summary.run.phase == "Failed":
        status = f"failed ({summary.run.reason or 'see the run'})"
    return RunEntry(run.namespace, run.name, run.uid, status,
                    sum(r is not None for r in results), len(summary.steps),
                    summary.run.completed_at, summary.series)  # fmt: skip


def scan(root: Path) -> list[RunEntry]:
    """Every run under the root: finished (its summary.json is there) or in progress."""
    entries = []
    for run_dir in sorted(root.glob("*/*/*")):
        try:
            run = RunId.parse(*run_dir.relative_to(root).parts)
        except PathRefusedError:
            continue
        if run_dir.is_dir():
            entries.append(_entry(run, run_dir))
    return entries


def _series_table(entries: list[RunEntry]) -> str:
    """Each series of the listed runs: its runs here and its newest end."""
    found: dict[tuple[str, str], list[RunEntry]] = {}
    for e in entries:
        if e.series is not None:
            found.setdefault((e.namespace, e.series), []).append(e)
    if not found:
        return ""
    rows = "".join(
        f"<tr data-series='{escape(ns)}/{escape(name)}'><td>{escape(ns)}</td>"
        f"<td><a href='{escape(series_href(ns, name))}'>{escape(name)}</a></td>"
        f"<td>{len(runs)}</td><td>{escape(max(e.completed or '' for e in runs))}</td></tr>"
        for (ns, name), runs in sorted(found.items())
    )
    return (
        "<h2>Series</h2><table data-table='series'><thead><tr><th>namespace</th><th>series"
        f"</th><th>runs</th><th>newest end</th></tr></thead><tbody>{rows}</tbody></table>"
        "<h2>Runs</h2>"
    )


def index_page(entries: list[RunEntry]) -> str:
    """The runs; finished ones can be ticked and compared (a plain GET form: the
    action is relative, so it also works behind the API server's service proxy)."""

    def tick(e: RunEntry) -> str:
        if e.steps_total is None:
            return "<td></td>"
        value = escape(f"{e.namespace}/{e.name}/{e.uid}")
        return f"<td><input type='checkbox' name='run' value='{value}'></td>"

    def series(e: RunEntry) -> str:
        if e.series is None:
            return "<td data-key='series'></td>"
        href = escape(series_href(e.namespace, e.series))
        return f"<td data-key='series'><a href='{href}'>{escape(e.series)}</a></td>"

    rows = "".join(
        f"<tr data-run='{escape(e.namespace)}/{escape(e.name)}'>{tick(e)}"
        f"<td>{escape(e.namespace)}</td>"
        f"<td><a href='{escape(e.href)}'>{escape(e.name)}</a></td><td>{escape(e.uid)}</td>"
        f"<td data-key='status'>{escape(e.status)}</td>"
        f"<td>{e.steps_done}{'' if e.steps_total is None else f' / {e.steps_total}'}</td>"
        f"<td>{escape(e.completed or '')}</td>{series(e)}</tr>"
        for e in entries
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>dbbench results"
        "</title><style>body{font-family:system-ui,sans-serif;margin:1.5rem}table{border-"
        "collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem}</style></head>"
        f"<body><h1>dbbench results</h1>{_series_table(entries)}"
        "<form method='get' action='compare'>"
        "<table data-table='runs'><thead><tr><th>compare</th><th>namespace</th>"
        "<th>run</th><th>uid</th><th>status</th><th>steps</th><th>completed</th>"
        "<th>series</th></tr></thead>"
        f"<tbody>{rows}</tbody></table><p><button type='submit'>Compare the ticked runs"
        "</button> (two or more)</p></form></body></html>\n"
    )
