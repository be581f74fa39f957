"""The results browser: a read-only web view of the results root.

    GET /                                         runs with their status, links to reports
    GET /runs/<ns>/<run>/<uid>/                   the run's report.html (rendered if absent)
    GET /runs/<ns>/<run>/<uid>/files/<path>       one result file
    GET /compare?run=<ns>/<run>/<uid>&run=...     two or more runs compared (dbbench compare's page)
    GET /api/runs                                 the runs, as JSON
    GET /api/runs/<ns>/<run>/<uid>/files          the run's files, as JSON (for `dbbench fetch`)
    GET /api/runs/<ns>/<run>/<uid>/archive        every file of the run as one tar.gz stream
    GET /api/series/<ns>/<series>[?run=<name>]    a series' history, as the service answers it
    GET /healthz

Nothing else: every other method is 405, every other path 404. Paths are the
results service's plain names (dbbench_results.paths), and resolved paths must
stay under the root, so no request reaches outside it. It runs as its own
process (`python -m dbbench_results.browser`) next to the results service,
with the claim mounted read-only, and needs no token: it serves results only.
"""

from __future__ import annotations

import argparse
import json
import logging
import mimetypes
import os
import re
import signal
import threading
from dataclasses import dataclass
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import ValidationError

from dbbench_contract.layout import POD_PREFIX, SUMMARY
from dbbench_contract.run_summary import RunSummary
from dbbench_report import REPORT, ResultsError, read_run, render
from dbbench_report.compare_page import compare_page
from dbbench_report.comparing import compare
from dbbench_results.archive import ARCHIVE_TYPE, run_files, write_archive
from dbbench_results.history.answer import (
    add_judging_flags,
    check_names,
    history,
    judging_from,
    read_only_series,
)
from dbbench_results.history.changes import Judging
from dbbench_results.limits import Limits
from dbbench_results.paths import PathRefusedError, RunId, relative
from dbbench_results.pool import BoundedHTTPServer
from dbbench_results.store import CHUNK

log = logging.getLogger(__name__)

_RUN = r"/(?P<ns>[^/]+)/(?P<name>[^/]+)/(?P<uid>[^/]+)"
_REPORT = re.compile(r"^/runs" + _RUN + r"/?$")
_FILE = re.compile(r"^/runs" + _RUN + r"/files/(?P<path>.+)$")
_FILES = re.compile(r"^/api/runs" + _RUN + r"/files$")
_ARCHIVE = re.compile(r"^/api/runs" + _RUN + r"/archive$")
_SERIES = re.compile(r"^/api/series/(?P<ns>[^/]+)/(?P<series>[^/]+)$")


@dataclass(frozen=True)
class RunEntry:
    namespace: str
    name: str
    uid: str
    status: str
    steps_done: int
    steps_total: int | None
    completed: str | None

    @property
    def href(self) -> str:
        return f"/runs/{self.namespace}/{self.name}/{self.uid}/"


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
                    summary.run.completed_at)  # fmt: skip


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


def index_page(entries: list[RunEntry]) -> str:
    """The runs; finished ones can be ticked and compared (a plain GET form: the
    action is relative, so it also works behind the API server's service proxy)."""

    def tick(e: RunEntry) -> str:
        if e.steps_total is None:
            return "<td></td>"
        value = escape(f"{e.namespace}/{e.name}/{e.uid}")
        return f"<td><input type='checkbox' name='run' value='{value}'></td>"

    rows = "".join(
        f"<tr data-run='{escape(e.namespace)}/{escape(e.name)}'>{tick(e)}"
        f"<td>{escape(e.namespace)}</td>"
        f"<td><a href='{escape(e.href)}'>{escape(e.name)}</a></td><td>{escape(e.uid)}</td>"
        f"<td data-key='status'>{escape(e.status)}</td>"
        f"<td>{e.steps_done}{'' if e.steps_total is None else f' / {e.steps_total}'}</td>"
        f"<td>{escape(e.completed or '')}</td></tr>"
        for e in entries
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>dbbench results"
        "</title><style>body{font-family:system-ui,sans-serif;margin:1.5rem}table{border-"
        "collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem}</style></head>"
        "<body><h1>dbbench results</h1><form method='get' action='compare'>"
        "<table data-table='runs'><thead><tr><th>compare</th><th>namespace</th>"
        "<th>run</th><th>uid</th><th>status</th><th>steps</th><th>completed</th></tr></thead>"
        f"<tbody>{rows}</tbody></table><p><button type='submit'>Compare the ticked runs"
        "</button> (two or more)</p></form></body></html>\n"
    )


class Handler(BaseHTTPRequestHandler):
    server_version = "dbbench-browser/0.1"
    protocol_version = "HTTP/1.1"
    root: Path  # set on the subclass made by `make_server`
    limits: Limits
    judging: Judging
    server: BoundedHTTPServer

    def handle_one_request(self) -> None:
        # Headers (and an idle keep-alive connection) get the request timeout.
        self.server.watchdog.watch(self.connection, self.limits.request_timeout_s)
        super().handle_one_request()

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _refuse(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"read-only: GET and HEAD only\n",
                   "text/plain", head=False, extra={"Allow": "GET, HEAD"})  # fmt: skip

    do_PUT = do_POST = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

    def _serve(self, *, head: bool) -> None:
        if match := _ARCHIVE.match(unquote(urlsplit(self.path).path)):
            self._archive(match, head=head)
            return
        try:
            status, body, kind = self._route(unquote(urlsplit(self.path).path))
        except PathRefusedError as exc:
            status, body, kind = HTTPStatus.BAD_REQUEST, f"path refused: {exc}\n", "text/plain"
        except ResultsError as exc:
            status, body, kind = HTTPStatus.NOT_FOUND, f"{exc}\n", "text/plain"
        except Exception:
            log.exception("GET %s failed", self.path)
            status, body, kind = HTTPStatus.INTERNAL_SERVER_ERROR, "internal error\n", "text/plain"
        if isinstance(body, Path):
            self._send_file(body, kind, head=head)
            return
        data = body if isinstance(body, bytes) else body.encode()
        self._send(status, data, kind, head=head)

    def _send_file(self, path: Path, kind: str, *, head: bool) -> None:
        """A result file in chunks: files reach results.maxUploadMB, the container's
        memory limit is of that order."""
        try:
            handle = path.open("rb")
        except FileNotFoundError:
            self._send(HTTPStatus.NOT_FOUND, b"no such file\n", "text/plain", head=head)
            return
        with handle:
            size = os.fstat(handle.fileno()).st_size
            self._headers(HTTPStatus.OK, size, kind)
            if head:
                return
            self.server.watchdog.watch(self.connection, self.limits.transfer_seconds(size))
            while chunk := handle.read(CHUNK):
                self.wfile.write(chunk)

    def _headers(self, status: HTTPStatus, length: int, kind: str,
                 extra: dict[str, str] | None = None) -> None:  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Type", kind if "charset" in kind or not kind.startswith("text")
                         else f"{kind}; charset=utf-8")  # fmt: skip
        self.send_header("Content-Length", str(length))
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def _send(self, status: HTTPStatus, data: bytes, kind: str, *, head: bool,
              extra: dict[str, str] | None = None) -> None:  # fmt: skip
        self._headers(status, len(data), kind, extra)
        if not head:
            self.wfile.write(data)

    def _archive(self, match: re.Match[str], *, head: bool) -> None:
        """The run's files as a tar.gz stream: its length is unknown ahead, so the
        body ends with the connection (HTTP/1.1 without Content-Length)."""
        try:
            run_dir = self._run_dir(match)
            names = self._list(run_dir)
        except PathRefusedError as exc:
            self._send(HTTPStatus.BAD_REQUEST, f"path refused: {exc}\n".encode(), "text/plain",
                       head=head)  # fmt: skip
            return
        except ResultsError as exc:
            self._send(HTTPStatus.NOT_FOUND, f"{exc}\n".encode(), "text/plain", head=head)
            return
        self.close_connection = True
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", ARCHIVE_TYPE)
        self.send_header("Connection", "close")
        self.send_header("X-Dbbench-Files", str(len(names)))
        self.end_headers()
        if not head:
            # The deadline grows with what is sent, as for one file (_send_file).
            size = sum((run_dir / n).stat().st_size for n in names if (run_dir / n).is_file())
            self.server.watchdog.watch(self.connection, self.limits.transfer_seconds(size))
            write_archive(run_dir, names, self.wfile)

    def _run_dir(self, match: re.Match[str]) -> Path:
        run = RunId.parse(match["ns"], match["name"], match["uid"])
        return self._confined(self.root / run.namespace / run.name / run.uid)

    def _confined(self, path: Path) -> Path:
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root.resolve()):
            raise PathRefusedError("outside the results root")
        return resolved

    def _route(self, path: str) -> tuple[HTTPStatus, str | bytes | Path, str]:  # noqa: PLR0911
        if path == "/healthz":
            return HTTPStatus.OK, "ok\n", "text/plain"
        if path == "/favicon.ico":  # browsers ask; an empty answer keeps their console clean
            return HTTPStatus.NO_CONTENT, b"", "image/x-icon"
        if path == "/":
            return HTTPStatus.OK, index_page(scan(self.root)), "text/html"
        if path == "/compare":
            return HTTPStatus.OK, self._compare(), "text/html"
        if path == "/api/runs":
            runs = [{**e.__dict__, "href": e.href} for e in scan(self.root)]
            return HTTPStatus.OK, json.dumps(runs), "application/json"
        if match := _REPORT.match(path):
            run_dir = self._run_dir(match)
            report = run_dir / REPORT
            if report.is_file():
                return HTTPStatus.OK, report.read_bytes(), "text/html"
            return HTTPStatus.OK, render(read_run(run_dir)), "text/html"
        if match := _FILES.match(path):
            return HTTPStatus.OK, json.dumps(self._list(self._run_dir(match))), "application/json"
        if match := _SERIES.match(path):
            return (
                HTTPStatus.OK,
                json.dumps(self._series(match["ns"], match["series"])),
                ("application/json"),
            )
        if match := _FILE.match(path):
            run_dir = self._run_dir(match)
            file = self._confined(run_dir / relative(match["path"]))
            if not file.is_file():
                return HTTPStatus.NOT_FOUND, f"no such file: {match['path']}\n", "text/plain"
            kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
            if file.suffix in (".csv", ".hlog"):
                kind = "text/plain"
            return HTTPStatus.OK, file, kind  # sent in chunks by _send
        return HTTPStatus.NOT_FOUND, f"not found: {path}\n", "text/plain"

    def _compare(self) -> str:
        chosen = parse_qs(urlsplit(self.path).query).get("run") or []
        if len(chosen) < 2:
            raise ResultsError("compare needs two or more runs: tick them on the index page")
        runs = []
        for value in chosen:
            parts = value.strip("/").split("/")
            if len(parts) != 3:
                raise PathRefusedError(f"run={value!r}: give <namespace>/<run>/<uid>")
            run = RunId.parse(*parts)
            runs.append(read_run(self._confined(self.root / run.namespace / run.name / run.uid)))
        return compare_page(runs, compare(runs))

    def _series(self, namespace: str, series: str) -> dict[str, Any]:
        run = next(iter(parse_qs(urlsplit(self.path).query).get("run") or []), None)
        check_names(namespace, series, run)
        points = read_only_series(self.root, namespace, series)
        return history(points, namespace, series, self.judging, run).to_wire()

    @staticmethod
    def _list(run_dir: Path) -> list[str]:
        if not run_dir.is_dir():
            raise ResultsError(f"no such run: {run_dir.name}")
        return run_files(run_dir)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        log.info("%s " + format, self.address_string(), *args)


def make_server(
    host: str, port: int, root: Path, judging: Judging | None = None
) -> BoundedHTTPServer:
    # The results service's defaults: bounded threads, a deadline per request.
    limits = Limits(workers=8, queue=32)
    attributes = {"root": Path(root), "limits": limits, "timeout": limits.request_timeout_s,
                  "judging": judging or Judging()}  # fmt: skip
    handler = type("BrowserHandler", (Handler,), attributes)
    return BoundedHTTPServer((host, port), handler, workers=limits.workers, waiting=limits.queue)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dbbench_results.browser",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--root", type=Path, required=True, help="results root (read-only)")
    parser.add_argument("--host", default="0.0.0.0")  # noqa: S104 - a Service fronts it
    parser.add_argument("--port", type=int, default=8081)
    add_judging_flags(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    server = make_server(args.host, args.port, args.root, judging_from(args))

    def stop(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logging.info("browsing %s on %s:%d", args.root, args.host, server.server_address[1])
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
