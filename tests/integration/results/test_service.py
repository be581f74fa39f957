"""The results service as runner pods and the operator meet it: a real process,
real HTTP, real files on disk."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from dbbench_contract.progress import PodProgress
from dbbench_local.results_service import ResultsService
from tests.fixtures.results_service import RUN_A, RUN_B, as_json, headers_only, request, token_for

pytestmark = pytest.mark.integration

FILE = f"/v1/runs/{RUN_A.path}/files/db/load/1/pod-0/summary.json"


def test_upload_then_read_back(service: ResultsService) -> None:
    token = token_for(service, RUN_A)
    status, body = request(service, "PUT", FILE, body=b'{"ok": 1}', token=token)
    assert status == 201, body
    assert as_json(body) == {"path": "db/load/1/pod-0/summary.json", "bytes": 9}
    on_disk = service.root / RUN_A.path / "db/load/1/pod-0/summary.json"
    assert on_disk.read_bytes() == b'{"ok": 1}'
    assert request(service, "GET", FILE, token=token) == (200, b'{"ok": 1}')


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({}, 401), ({"Authorization": "Basic abc"}, 401), ({"Authorization": "Bearer nope"}, 403)],
)
def test_missing_or_wrong_token_is_refused(
    service: ResultsService, headers: dict[str, str], expected: int
) -> None:
    status, body = request(service, "PUT", FILE, body=b"x", headers=headers)
    assert status == expected, body
    assert not (service.root / RUN_A.path).exists()


def test_one_run_cannot_write_into_another_runs_directory(service: ResultsService) -> None:
    token_b = token_for(service, RUN_B)
    status, body = request(service, "PUT", FILE, body=b"x", token=token_b)
    assert status == 403
    assert "does not open this run" in as_json(body)["error"]
    # Nor read it.
    request(service, "PUT", FILE, body=b"a", token=token_for(service, RUN_A))
    assert request(service, "GET", FILE, token=token_b)[0] == 403


@pytest.mark.parametrize(
    "suffix",
    [
        "files/../run-b/x",
        "files/%2E%2E/%2E%2E/escape",
        "files/db/../../../../etc/passwd",
        "files/%2Fetc%2Fpasswd",
        "files/.hidden",
    ],
)
def test_traversal_and_absolute_paths_are_refused(service: ResultsService, suffix: str) -> None:
    token = token_for(service, RUN_A)
    status, _ = request(service, "PUT", f"/v1/runs/{RUN_A.path}/{suffix}", body=b"x", token=token)
    assert status in (400, 404)
    written = [p for p in service.root.parent.rglob("*") if p.name in ("x", "escape", "passwd")]
    assert written == []


def test_oversized_uploads_are_refused_and_nothing_is_written(service: ResultsService) -> None:
    token = token_for(service, RUN_A)
    size = service.max_upload_mb * 1024 * 1024 + 1
    # Headers only: the answer must come without the body being read (a client
    # still sending when the service closes would see a reset instead).
    status, body = headers_only(service, "PUT", FILE, size, token)
    assert status == 413
    error = as_json(body)
    assert error["limit"] == "results.maxUploadMB"
    assert f"{size:,} bytes" in error["error"]
    assert "raise results.maxUploadMB" in error["error"]
    assert not (service.root / RUN_A.path / "db/load/1/pod-0/summary.json").exists()


def test_upload_without_length_is_refused(service: ResultsService) -> None:
    token = token_for(service, RUN_A)
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(
            f"PUT {FILE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n".encode()
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 411")


def test_a_half_written_upload_is_never_read(service: ResultsService) -> None:
    token = token_for(service, RUN_A)
    assert request(service, "PUT", FILE, body=b"old content", token=token)[0] == 201
    new = b"N" * 200_000
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(
            f"PUT {FILE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Length: {len(new)}\r\n\r\n".encode()
        )
        sock.sendall(new[:100_000])
        time.sleep(0.3)
        # Mid-upload, readers see the old file whole.
        assert request(service, "GET", FILE, token=token) == (200, b"old content")
        # The client goes away: the partial upload is dropped, the old file stays.
    time.sleep(0.3)
    assert request(service, "GET", FILE, token=token) == (200, b"old content")
    leftovers = [p.name for p in (service.root / RUN_A.path).rglob(".upload-*")]
    assert leftovers == []


def test_acknowledged_files_survive_a_killed_service(service: ResultsService) -> None:
    token = token_for(service, RUN_A)
    payloads = {f"/v1/runs/{RUN_A.path}/files/db/p/1/pod-{i}/f.bin": bytes([i]) * 5000
                for i in range(20)}  # fmt: skip
    errors: list[object] = []

    def upload(path: str, data: bytes) -> None:
        # An exception in a thread would not fail the test: record it.
        try:
            status, _ = request(service, "PUT", path, body=data, token=token)
        except OSError as exc:
            errors.append(exc)
            return
        if status != 201:
            errors.append(status)

    threads = [threading.Thread(target=upload, args=item) for item in payloads.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    service.stop(kill=True)
    service.start()
    for path, data in payloads.items():
        assert request(service, "GET", path, token=token) == (200, data)


def test_merge_of_an_incomplete_step_is_a_conflict(service: ResultsService) -> None:
    token = token_for(service, RUN_A)
    step = f"/v1/runs/{RUN_A.path}/steps/db/load/1"
    status, body = request(service, "POST", f"{step}/merge?pods=2", token=token)
    assert status == 409
    assert "pods 0, 1 of 2" in as_json(body)["error"]
    assert request(service, "POST", f"{step}/merge", token=token)[0] == 400
    assert request(service, "POST", f"{step}/merge?pods=2", token="bad")[0] == 403


def test_progress_adds_up_the_pods(service: ResultsService, tmp_path: Path) -> None:
    token = token_for(service, RUN_A)
    for pod, (ops, percent) in enumerate([(100, 40.0), (300, 60.0)]):
        report = PodProgress(phase="mix", operations=ops, errors=1, rate=50.0, percent=percent,
                             records=ops * 10, records_per_second=500.0,
                             eta_seconds=10.0 * (pod + 1))  # fmt: skip
        path = f"/v1/runs/{RUN_A.path}/files/db/mix/2/pod-{pod}/progress.json"
        body = json.dumps(report.to_wire()).encode()
        assert request(service, "PUT", path, body=body, token=token)[0] == 201
    status, body = request(
        service, "GET", f"/v1/runs/{RUN_A.path}/steps/db/mix/2/progress?pods=3", token=token
    )
    assert status == 200
    progress = as_json(body)
    assert progress["operations"] == 400
    assert progress["errors"] == 2
    assert progress["rate"] == 100.0
    assert progress["records"] == 4000
    assert progress["recordsPerSecond"] == 1000.0
    assert progress["reporting"] == 2
    assert progress["finished"] == 0
    assert progress["percent"] == pytest.approx(100.0 / 3)  # the silent third pod counts as 0
    assert progress["etaSeconds"] == 20.0
