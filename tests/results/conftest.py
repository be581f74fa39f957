"""A real results service process per test module (see dbbench_local.results_service)."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from dbbench_contract.tokens import run_token
from dbbench_local.results_service import ResultsService, start_results_service


@dataclass(frozen=True)
class Run:
    namespace: str
    name: str
    uid: str

    @property
    def path(self) -> str:
        return f"{self.namespace}/{self.name}/{self.uid}"


RUN_A = Run("team-a", "run-a", "0b6f3a1e-aaaa")
RUN_B = Run("team-a", "run-b", "0b6f3a1e-bbbb")


def request(
    service: ResultsService,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        sent = {**(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def headers_only(
    service: ResultsService, method: str, path: str, length: int, token: str
) -> tuple[int, bytes]:
    """Send a request's headers announcing `length` bytes, no body; the answer."""
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Length: {length}\r\n\r\n".encode()
        )
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read()


def token_for(service: ResultsService, run: Run) -> str:
    return run_token(service.key, run.namespace, run.name, run.uid)


def as_json(data: bytes) -> Any:
    return json.loads(data)


@pytest.fixture
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResultsService]:
    started = start_results_service(tmp_path_factory.mktemp("results"), max_upload_mb=1)
    try:
        yield started
    finally:
        started.stop()
