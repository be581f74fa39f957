"""The results browser's series routes (the browser only routes; pages are pure):

    GET /series/<ns>/<series>[?op=<operation type>]   the series' page (series_page)
    GET /api/series/<ns>/<series>[?run=<name>]        its history, as the service answers it

Both read the service's index read-only (or the files when it cannot be read)
and judge alike (the browser takes the service's --significance and --min-runs).
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from pathlib import Path
from urllib.parse import parse_qs

from dbbench_contract.history import ALL_OPERATIONS, SeriesHistory
from dbbench_report import ResultsError
from dbbench_results.history.answer import check_names, history, read_only_series
from dbbench_results.history.changes import Judging
from dbbench_results.series_page import known_operation_types, series_page

_API = re.compile(r"^/api/series/(?P<ns>[^/]+)/(?P<series>[^/]+)$")
_PAGE = re.compile(r"^/series/(?P<ns>[^/]+)/(?P<series>[^/]+)$")
# The page has no script and loads nothing: nothing but its own inline styles
# (and its SVG's) may run or load, and its form submits to the browser only.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'self'",
}


def _first(query: str, name: str) -> str | None:
    return next(iter(parse_qs(query).get(name) or []), None)


def _history(root: Path, judging: Judging, namespace: str, series: str,
             run: str | None = None) -> SeriesHistory:  # fmt: skip
    check_names(namespace, series, run)
    return history(read_only_series(root, namespace, series), namespace, series, judging, run)


def route(root: Path, judging: Judging, path: str,
          query: str) -> tuple[HTTPStatus, str, str] | None:  # fmt: skip
    """(status, body, content type) for a series path; None for any other path."""
    if match := _API.match(path):
        answer = _history(root, judging, match["ns"], match["series"], _first(query, "run"))
        return HTTPStatus.OK, json.dumps(answer.to_wire()), "application/json"
    if match := _PAGE.match(path):
        answer = _history(root, judging, match["ns"], match["series"])
        op = _first(query, "op") or ALL_OPERATIONS
        if answer.points and op not in known_operation_types(answer):
            known = ", ".join(known_operation_types(answer))
            raise ResultsError(f"series {answer.namespace}/{answer.series} has no operation "
                               f"type {op!r}: {known}")  # fmt: skip
        return HTTPStatus.OK, series_page(answer, op), "text/html"
    return None


def headers(path: str) -> dict[str, str] | None:
    return PAGE_HEADERS if _PAGE.match(path) else None
