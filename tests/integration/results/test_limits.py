"""The results service's limits on the real process: the per-run quota, the claim's
free space (a real small filesystem), slow clients cut at their deadline, and the
bounded worker pool. Each refusal names the chart value that sets the limit."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbbench_local.results_service import ResultsService, start_results_service
from tests.fixtures.confinement import small_filesystem
from tests.fixtures.results_service import (
    RUN_A,
    RUN_B,
    Run,
    as_json,
    headers_only,
    request,
    token_for,
)

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


def put(service: ResultsService, run: Run, path: str, size: int) -> tuple[int, bytes]:
    url = f"/v1/runs/{run.path}/files/{path}"
    return request(service, "PUT", url, body=b"r" * size, token=token_for(service, run))


@pytest.fixture
def quota_service(tmp_path: Path) -> Iterator[ResultsService]:
    service = start_results_service(tmp_path, extra_args=("--run-quota-mb", "2"))
    try:
        yield service
    finally:
        service.stop()


def test_a_run_over_its_quota_is_refused_naming_the_value_and_others_go_on(
    quota_service: ResultsService,
) -> None:
    service = quota_service
    assert put(service, RUN_A, "db/load/1/pod-0/a.bin", 3 * MIB // 2)[0] == 201
    # The same file again replaces it: a retried upload costs nothing.
    assert put(service, RUN_A, "db/load/1/pod-0/a.bin", 3 * MIB // 2)[0] == 201
    status, body = headers_only(
        service, "PUT", f"/v1/runs/{RUN_A.path}/files/db/load/1/pod-0/b.bin", MIB,
        token_for(service, RUN_A),
    )  # fmt: skip
    assert status == 413
    error = as_json(body)
    assert error["limit"] == "results.runQuotaMB"
    assert f"run {RUN_A.path} holds 1.5 MiB" in error["error"]
    assert "quota of 2.0 MiB" in error["error"]
    assert "raise results.runQuotaMB" in error["error"]
    assert not (service.root / RUN_A.path / "db/load/1/pod-0/b.bin").exists()
    # Another run has its own quota.
    assert put(service, RUN_B, "db/load/1/pod-0/b.bin", MIB)[0] == 201
    # A restarted service counts what is on the claim.
    service.stop()
    service.start()
    status, _ = headers_only(service, "PUT", f"/v1/runs/{RUN_A.path}/files/db/load/1/pod-0/c.bin",
                             MIB, token_for(service, RUN_A))  # fmt: skip
    assert status == 413
    assert put(service, RUN_A, "db/load/1/pod-0/c.bin", MIB // 4)[0] == 201


def test_an_upload_that_would_fill_the_claim_is_refused_for_every_run(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "claim", 32) as claim:
        service = start_results_service(
            tmp_path, root=claim / "results", extra_args=("--min-free-mb", "8")
        )
        try:
            assert put(service, RUN_A, "db/load/1/pod-0/a.bin", 20 * MIB)[0] == 201
            for run in (RUN_A, RUN_B):  # one run filled it: the check is the claim's
                status, body = headers_only(
                    service, "PUT", f"/v1/runs/{run.path}/files/db/load/1/pod-0/x.bin",
                    6 * MIB, token_for(service, run),
                )  # fmt: skip
                assert status == 507
                error = as_json(body)
                assert error["limit"] == "results.minFreeMB"
                assert "delete old runs' results from the claim or grow it" in error["error"]
            # Small files still fit above the reserve.
            assert put(service, RUN_B, "db/load/1/pod-0/small.bin", MIB)[0] == 201
            assert request(service, "GET", "/healthz")[0] == 200
        finally:
            service.stop()
        leftovers = [p.name for p in claim.rglob(".upload-*")]
        assert leftovers == []


@pytest.fixture
def strict_service(tmp_path: Path) -> Iterator[ResultsService]:
    """One worker, one waiting place, 2 s for headers, 64 KiB/s for bodies."""
    flags = ("--workers", "1", "--queue", "1", "--request-timeout", "2", "--min-rate-kib", "64")
    service = start_results_service(tmp_path, extra_args=flags)
    try:
        yield service
    finally:
        service.stop()


def closed_after(sock: socket.socket, limit: float) -> float:
    """Seconds until the service closes `sock` (reading what it sends)."""
    start = time.monotonic()
    sock.settimeout(limit)
    while sock.recv(4096):
        pass
    return time.monotonic() - start


def test_a_client_trickling_its_headers_is_cut_at_the_request_timeout(
    strict_service: ResultsService,
) -> None:
    service = strict_service
    sock = socket.create_connection(("127.0.0.1", service.port))
    start = time.monotonic()
    # One byte every 0.5 s: each read succeeds, so a socket timeout alone never fires.
    for byte in b"GET /healthz HTTP/1.1\r\nHost: slow-client-header\r\n":
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
        time.sleep(0.5)
        if time.monotonic() - start > 10:
            break
    held = time.monotonic() - start
    sock.close()
    assert held < 6, f"a trickling client held the only worker for {held:.1f}s"
    assert request(service, "GET", "/healthz")[0] == 200


def start_upload(service: ResultsService, name: str, size: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", service.port))
    sock.sendall(
        f"PUT /v1/runs/{RUN_A.path}/files/db/load/1/pod-0/{name} HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {token_for(service, RUN_A)}\r\nContent-Length: {size}\r\n\r\n"
        .encode() + b"s" * 1024
    )  # fmt: skip
    return sock


def no_file(service: ResultsService, name: str) -> bool:
    run_dir = service.root / RUN_A.path
    return not list(run_dir.rglob(name)) and not list(run_dir.rglob(".upload-*"))


def test_a_stalled_upload_is_cut_at_the_request_timeout(strict_service: ResultsService) -> None:
    service = strict_service
    sock = start_upload(service, "stalled.bin", 256 * 1024)
    held = closed_after(sock, 30)
    sock.close()
    assert 1.5 < held < 6, held
    assert request(service, "GET", "/healthz")[0] == 200
    assert no_file(service, "stalled.bin")


def test_an_upload_below_the_minimum_rate_is_cut_at_its_deadline(
    strict_service: ResultsService,
) -> None:
    service = strict_service
    size = 256 * 1024  # may take 2 s + 256 KiB / (64 KiB/s) = 6 s
    sock = start_upload(service, "slow.bin", size)
    start = time.monotonic()
    sent = 1024
    try:
        while sent < size and time.monotonic() - start < 20:
            time.sleep(0.5)  # 2 KiB/s: never idle for the timeout, always too slow
            sock.sendall(b"s" * 1024)
            sent += 1024
    except OSError:
        pass
    held = time.monotonic() - start
    sock.close()
    assert 5 < held < 11, f"cut after {held:.1f}s, {sent} of {size} bytes"
    assert request(service, "GET", "/healthz")[0] == 200
    assert no_file(service, "slow.bin")


def test_past_the_pool_and_its_queue_a_request_gets_503_with_retry_after(
    strict_service: ResultsService,
) -> None:
    service = strict_service
    # The worker and the one waiting place, each held by a silent connection (one
    # at a time: the first must have reached the worker before the second queues).
    held = []
    for _ in range(2):
        held.append(socket.create_connection(("127.0.0.1", service.port)))
        time.sleep(0.5)
    try:
        with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = sock.recv(4096)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503"), answer
        assert b"Retry-After: 2" in head
        error = as_json(body)
        assert error["limit"] == "results.queue"
        assert "1 requests served, 1 waiting" in error["error"]
    finally:
        for sock in held:
            sock.close()
    # Bounded, not stuck: once they are gone the service answers again.
    deadline = time.monotonic() + 10
    while request(service, "GET", "/healthz")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.2)
