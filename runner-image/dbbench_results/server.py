"""The HTTP front of the results service (standard library only).

    GET  /healthz
    PUT  /v1/runs/<ns>/<run>/<uid>/files/<path>                       upload one file
    GET  /v1/runs/<ns>/<run>/<uid>/files/<path>                       read one file
    POST /v1/runs/<ns>/<run>/<uid>/steps/<target>/<phase>/<repeat>/merge?pods=N
    GET  /v1/runs/<ns>/<run>/<uid>/steps/<target>/<phase>/<repeat>/progress?pods=N
    GET  /v1/series/<ns>/<series>[?run=<name>]                       a series' history

Every /v1/runs request carries ``Authorization: Bearer <run token>``; a series
spans runs, so /v1/series takes the series token (both derived from the
service key: dbbench_contract.tokens). Answers are
JSON; errors are ``{"error": "...", "limit": "<chart value>"}`` with a status
that says what to fix (`limits` names each limit). Files are read and written
in chunks: neither direction holds a whole file in memory.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO
from urllib.parse import parse_qs, unquote, urlsplit

from dbbench_contract.tokens import series_token_matches, token_matches
from dbbench_results.history.answer import check_names, history
from dbbench_results.history.changes import Judging
from dbbench_results.history.index import HistoryIndex, SqliteIndex, series_from_files
from dbbench_results.limits import Limits, Quotas, RefusedError, check_free_space, check_size
from dbbench_results.limits import free_bytes as claim_free_bytes
from dbbench_results.metering import ResultsMetrics
from dbbench_results.paths import PathRefusedError, RunId, relative, step_dir
from dbbench_results.pool import BoundedHTTPServer
from dbbench_results.reports import is_run_summary, render_in_background
from dbbench_results.steps import StepIncompleteError, merge_step, step_progress
from dbbench_results.store import CHUNK, IncompleteUploadError, Store

log = logging.getLogger(__name__)

_RUN = r"/v1/runs/(?P<ns>[^/]+)/(?P<name>[^/]+)/(?P<uid>[^/]+)"
_FILES = re.compile(_RUN + r"/files/(?P<path>.+)$")
_STEP = re.compile(
    _RUN
    + r"/steps/(?P<target>[^/]+)/(?P<phase>[^/]+)/(?P<repeat>[^/]+)/(?P<action>merge|progress)$"
)
_SERIES = re.compile(r"/v1/series/(?P<ns>[^/]+)/(?P<series>[^/]+)$")
MAX_PODS = 1024
# Merges load histograms and use a core each: two at a time on the service's budget.
_merges = threading.BoundedSemaphore(2)


@dataclass(frozen=True)
class Config:
    store: Store
    key: bytes
    limits: Limits = field(default_factory=Limits)
    # None: the SQLite index on the claim (history.index).
    history: HistoryIndex | None = None
    judging: Judging = field(default_factory=Judging)
    # False (--reports=view): no report.html at upload; the browser draws it when opened.
    reports_at_upload: bool = True
    quotas: Quotas = field(init=False)
    metrics: ResultsMetrics = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "quotas", Quotas(self.limits))
        if self.history is None:
            object.__setattr__(self, "history", SqliteIndex(self.store.root))
        object.__setattr__(self, "metrics", ResultsMetrics(self.store.root))


class HttpError(RefusedError):
    pass


@dataclass(frozen=True)
class FileBody:
    """A stored file, sent in chunks."""

    handle: BinaryIO
    size: int


class Handler(BaseHTTPRequestHandler):
    server_version = "dbbench-results/0.2"
    protocol_version = "HTTP/1.1"
    config: Config  # set on the subclass made by `make_server`
    server: BoundedHTTPServer

    def handle_one_request(self) -> None:
        # Headers (and an idle keep-alive connection) get the request timeout.
        self._deadline(self.config.limits.request_timeout_s)
        super().handle_one_request()

    def _deadline(self, seconds: float | None) -> None:
        self.server.watchdog.watch(self.connection, seconds)

    # -- dispatch ---------------------------------------------------------------

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        try:
            status, body = self._route(method)
        except RefusedError as exc:
            status, body = exc.status, exc.body()
        except PathRefusedError as exc:
            status, body = HTTPStatus.BAD_REQUEST, {"error": f"path refused: {exc}"}
        except Exception:
            log.exception("%s %s failed", method, self.path)
            status, body = HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error; see logs"}
        try:
            if isinstance(body, FileBody):
                self._send_file(status, body)
            else:
                self._send(status, json.dumps(body).encode(), "application/json")
        except OSError as exc:  # the client went away or was cut at its deadline
            log.info("%s %s: answer not sent (%s)", method, self.path, type(exc).__name__)
            self.close_connection = True

    def _route(self, method: str) -> tuple[HTTPStatus, Any]:
        url = urlsplit(self.path)
        if url.path == "/healthz" and method == "GET":
            return HTTPStatus.OK, {"status": "ok"}
        if match := _FILES.match(url.path):
            run = self._authorized(match)
            path = relative(unquote(match["path"]))
            if method == "PUT":
                return self._put(run, path)
            if method == "GET":
                return self._get(run, path)
        elif match := _STEP.match(url.path):
            run = self._authorized(match)
            step = step_dir(*(unquote(match[k]) for k in ("target", "phase", "repeat")))
            pods = _pods(parse_qs(url.query))
            directory = self.config.store.path(run, step)
            if match["action"] == "merge" and method == "POST":
                return HTTPStatus.OK, self._merge(run, directory, pods)
            if match["action"] == "progress" and method == "GET":
                return HTTPStatus.OK, step_progress(directory, pods).to_wire()
        elif (match := _SERIES.match(url.path)) and method == "GET":
            return HTTPStatus.OK, self._series(match, parse_qs(url.query))
        self._discard_body()
        raise HttpError(HTTPStatus.NOT_FOUND, f"no such endpoint: {method} {url.path}")

    # -- endpoints --------------------------------------------------------------

    def _put(self, run: RunId, path: PurePosixPath) -> tuple[HTTPStatus, Any]:
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self.close_connection = True
            raise HttpError(HTTPStatus.LENGTH_REQUIRED, "send Content-Length (no chunked uploads)")
        length = int(length_header)
        store, limits = self.config.store, self.config.limits
        run_dir = store.run_dir(run)
        replaced = store.size(run, path)
        try:
            check_size(length, limits)
            check_free_space(claim_free_bytes(store.root), length - replaced, limits)
            self.config.quotas.reserve(run_dir, str(run.prefix), length, replaced)
        except RefusedError:
            self.close_connection = True  # the body is not read: close instead of draining
            self.config.metrics.uploaded("refused")
            raise
        written = 0
        try:
            self._deadline(limits.transfer_seconds(length))
            written = store.write(run, path, self.rfile, length)
        except (IncompleteUploadError, OSError) as exc:
            self.close_connection = True
            log.warning("upload of %s/%s not stored: %s", run.prefix, path, exc)
            self.config.metrics.uploaded("failed")
            raise HttpError(HTTPStatus.BAD_REQUEST, f"upload not stored: {exc}") from exc
        finally:
            self.config.quotas.settle(run_dir, length, stored=written, replaced=replaced)
            self._deadline(limits.request_timeout_s)
        self.config.metrics.uploaded("stored", written)
        if is_run_summary(path):
            self._index(run_dir)
            if self.config.reports_at_upload:
                render_in_background(run_dir)
        return HTTPStatus.CREATED, {"path": str(path), "bytes": written}

    def _get(self, run: RunId, path: PurePosixPath) -> tuple[HTTPStatus, Any]:
        handle = self.config.store.open(run, path)
        if handle is None:
            raise HttpError(HTTPStatus.NOT_FOUND, f"{path}: no such file")
        return HTTPStatus.OK, FileBody(handle, _size(handle))

    def _merge(self, run: RunId, directory: Path, pods: int) -> dict[str, Any]:
        self._deadline(None)  # the service's own work: the socket timeout still bounds the answer
        started, outcome = time.monotonic(), "failed"
        try:
            with _merges:
                merged = merge_step(directory, pods).to_wire()
            outcome = "merged"
        except StepIncompleteError as exc:
            outcome = "incomplete"
            raise HttpError(HTTPStatus.CONFLICT, str(exc)) from exc
        finally:
            self.config.quotas.forget(self.config.store.run_dir(run))
            self.config.metrics.merged(outcome, time.monotonic() - started)
        return merged

    def _series(self, match: re.Match[str], query: dict[str, list[str]]) -> dict[str, Any]:
        namespace, series = unquote(match["ns"]), unquote(match["series"])
        runs = query.get("run", [])
        if len(runs) > 1:
            raise HttpError(HTTPStatus.BAD_REQUEST, "run: give ?run=<name> at most once")
        run = runs[0] if runs else None
        check_names(namespace, series, run)
        self._token(series_token_matches, "series token", "this series", namespace, series)
        assert self.config.history is not None
        self._deadline(None)  # the service's own work, bounded by the socket timeout
        try:
            points = self.config.history.series(namespace, series)
        except Exception:  # the index is a cache: the files answer (slower) when it cannot
            log.exception("history index: series %s/%s read from the files", namespace, series)
            points = series_from_files(self.config.store.root, namespace, series)
        return history(points, namespace, series, self.config.judging, run).to_wire()

    def _index(self, run_dir: Path) -> None:
        """Add the run to its series' index before answering, so the operator's
        next question (the run's verdict) sees it. The index is a cache of the
        files: failing to add never fails the upload (the report is written and
        the index rebuilt from the files later)."""
        assert self.config.history is not None
        try:
            added = self.config.history.add_run(run_dir)
        except Exception:
            log.exception("history index: %s not added", run_dir)
            return
        log.info("history index: %s added (%d points)", run_dir, added)

    # -- helpers ----------------------------------------------------------------

    def _authorized(self, match: re.Match[str]) -> RunId:
        run = RunId.parse(unquote(match["ns"]), unquote(match["name"]), unquote(match["uid"]))
        self._token(token_matches, "run token", "this run's results", *run.prefix.parts)
        return run

    def _token(self, matches: Callable[..., bool], kind: str, opens: str, *names: str) -> None:
        header = self.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            self._discard_body()
            raise HttpError(HTTPStatus.UNAUTHORIZED, f"send Authorization: Bearer <{kind}>")
        if not matches(self.config.key, *names, token.strip()):
            self._discard_body()
            raise HttpError(HTTPStatus.FORBIDDEN, f"the token does not open {opens}")

    def _discard_body(self) -> None:
        # A refused upload's body is not read: close rather than drain it.
        if self.headers.get("Content-Length", "0") != "0":
            self.close_connection = True

    def _headers(self, status: HTTPStatus, length: int, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self._headers(status, len(body), content_type)
        self.wfile.write(body)

    def _send_file(self, status: HTTPStatus, body: FileBody) -> None:
        with body.handle:
            self._deadline(self.config.limits.transfer_seconds(body.size))
            self._headers(status, body.size, "application/octet-stream")
            sent = 0
            while sent < body.size and (chunk := body.handle.read(min(CHUNK, body.size - sent))):
                self.wfile.write(chunk)
                sent += len(chunk)
            if sent < body.size:  # the file shrank under us: the length we sent is wrong
                self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base class's name
        log.info("%s %s", self.address_string(), format % args)


def _size(handle: BinaryIO) -> int:
    return os.fstat(handle.fileno()).st_size


def _pods(query: dict[str, list[str]]) -> int:
    values = query.get("pods", [])
    if len(values) != 1 or not values[0].isdigit() or not 1 <= int(values[0]) <= MAX_PODS:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"pods: give ?pods=N with 1 <= N <= {MAX_PODS}")
    return int(values[0])


def make_server(host: str, port: int, config: Config) -> BoundedHTTPServer:
    # `timeout`: idle connections and each socket read end after the request timeout.
    attributes = {"config": config, "timeout": config.limits.request_timeout_s}
    handler = type("ConfiguredHandler", (Handler,), attributes)
    return BoundedHTTPServer(
        (host, port), handler, workers=config.limits.workers, waiting=config.limits.queue
    )
