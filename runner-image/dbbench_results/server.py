"""The HTTP front of the results service (standard library only).

    GET  /healthz
    PUT  /v1/runs/<ns>/<run>/<uid>/files/<path>                       upload one file
    GET  /v1/runs/<ns>/<run>/<uid>/files/<path>                       read one file
    POST /v1/runs/<ns>/<run>/<uid>/steps/<target>/<phase>/<repeat>/merge?pods=N
    GET  /v1/runs/<ns>/<run>/<uid>/steps/<target>/<phase>/<repeat>/progress?pods=N

Every /v1 request carries ``Authorization: Bearer <run token>``. Answers are
JSON; errors are ``{"error": "..."}`` with a status that says what to fix.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from dbbench_contract.tokens import token_matches
from dbbench_results.paths import PathRefusedError, RunId, relative, step_dir
from dbbench_results.reports import is_run_summary, render_in_background
from dbbench_results.steps import StepIncompleteError, merge_step, step_progress
from dbbench_results.store import IncompleteUploadError, Store

log = logging.getLogger(__name__)

_RUN = r"/v1/runs/(?P<ns>[^/]+)/(?P<name>[^/]+)/(?P<uid>[^/]+)"
_FILES = re.compile(_RUN + r"/files/(?P<path>.+)$")
_STEP = re.compile(
    _RUN
    + r"/steps/(?P<target>[^/]+)/(?P<phase>[^/]+)/(?P<repeat>[^/]+)/(?P<action>merge|progress)$"
)
MAX_PODS = 1024


@dataclass(frozen=True)
class Config:
    store: Store
    key: bytes
    max_upload_bytes: int


class HttpError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class Handler(BaseHTTPRequestHandler):
    server_version = "dbbench-results/0.1"
    protocol_version = "HTTP/1.1"
    config: Config  # set on the subclass made by `make_server`

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
        except HttpError as exc:
            status, body = exc.status, {"error": str(exc)}
        except PathRefusedError as exc:
            status, body = HTTPStatus.BAD_REQUEST, {"error": f"path refused: {exc}"}
        except Exception:
            log.exception("%s %s failed", method, self.path)
            status, body = HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error; see logs"}
        if isinstance(body, bytes):
            self._send(status, body, "application/octet-stream")
        else:
            self._send(status, json.dumps(body).encode(), "application/json")

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
                try:
                    return HTTPStatus.OK, merge_step(directory, pods).to_wire()
                except StepIncompleteError as exc:
                    raise HttpError(HTTPStatus.CONFLICT, str(exc)) from exc
            if match["action"] == "progress" and method == "GET":
                return HTTPStatus.OK, step_progress(directory, pods).to_wire()
        self._discard_body()
        raise HttpError(HTTPStatus.NOT_FOUND, f"no such endpoint: {method} {url.path}")

    # -- endpoints --------------------------------------------------------------

    def _put(self, run: RunId, path: PurePosixPath) -> tuple[HTTPStatus, Any]:
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self.close_connection = True
            raise HttpError(HTTPStatus.LENGTH_REQUIRED, "send Content-Length (no chunked uploads)")
        length = int(length_header)
        if length > self.config.max_upload_bytes:
            # Not reading the body: close the connection instead.
            self.close_connection = True
            raise HttpError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"{length} bytes exceeds the service's limit of {self.config.max_upload_bytes}",
            )
        try:
            written = self.config.store.write(run, path, self.rfile, length)
        except IncompleteUploadError as exc:
            self.close_connection = True
            raise HttpError(HTTPStatus.BAD_REQUEST, str(exc)) from exc
        if is_run_summary(path):
            render_in_background(self.config.store.run_dir(run))
        return HTTPStatus.CREATED, {"path": str(path), "bytes": written}

    def _get(self, run: RunId, path: PurePosixPath) -> tuple[HTTPStatus, Any]:
        data = self.config.store.read(run, path)
        if data is None:
            raise HttpError(HTTPStatus.NOT_FOUND, f"{path}: no such file")
        return HTTPStatus.OK, data

    # -- helpers ----------------------------------------------------------------

    def _authorized(self, match: re.Match[str]) -> RunId:
        run = RunId.parse(unquote(match["ns"]), unquote(match["name"]), unquote(match["uid"]))
        header = self.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            self._discard_body()
            raise HttpError(HTTPStatus.UNAUTHORIZED, "send Authorization: Bearer <run token>")
        if not token_matches(self.config.key, run.namespace, run.name, run.uid, token.strip()):
            self._discard_body()
            raise HttpError(HTTPStatus.FORBIDDEN, "the token does not open this run's results")
        return run

    def _discard_body(self) -> None:
        # A refused upload's body is not read: close rather than drain it.
        if self.headers.get("Content-Length", "0") != "0":
            self.close_connection = True

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base class's name
        log.info("%s %s", self.address_string(), format % args)


def _pods(query: dict[str, list[str]]) -> int:
    values = query.get("pods", [])
    if len(values) != 1 or not values[0].isdigit() or not 1 <= int(values[0]) <= MAX_PODS:
        raise HttpError(HTTPStatus.BAD_REQUEST, f"pods: give ?pods=N with 1 <= N <= {MAX_PODS}")
    return int(values[0])


class _Server(ThreadingHTTPServer):
    # Every runner pod of a step uploads at the same moment; the default
    # listen backlog of 5 made the kernel reset some of those connections.
    request_queue_size = 256


def make_server(host: str, port: int, config: Config) -> ThreadingHTTPServer:
    handler = type("ConfiguredHandler", (Handler,), {"config": config})
    server = _Server((host, port), handler)
    server.daemon_threads = True
    return server
