"""A 600 MiB file and a service limited to 512 MiB, like its pod (results.resources):
refused at the door by default, streamed both ways when allowed, and the
service stays up with a small resident set either way.

The limit is a real memory cgroup the service process joins before it starts
(cgroup v1 memory.limit_in_bytes here; v2 memory.max elsewhere), so an
implementation that holds a whole file in memory is OOM-killed, as in the pod.
"""

from __future__ import annotations

import hashlib
import http.client
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbbench_local.results_service import ResultsService, start_results_service
from tests.fixtures.confinement import MemoryCgroup, memory_cgroup, peak_rss
from tests.fixtures.results_service import RUN_A, as_json, headers_only, request, token_for

pytestmark = pytest.mark.integration

MIB = 1024 * 1024
POD_LIMIT = 512 * MIB
SIZE = 600 * MIB
BIG = f"/v1/runs/{RUN_A.path}/files/db/load/1/pod-0/big.bin"
# Python, pydantic and the runner's merge code loaded: what the service needs
# besides its chunks. Far below the file; far above the 1 MiB chunk it streams in.
RSS_BOUND = 160 * MIB


class Pattern:
    """`size` bytes made on the fly (never whole in memory), hashed as they go."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.index = 0
        self.block = os.urandom(MIB)
        self.sha = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = min(MIB if n < 0 else n, MIB, self.left)
        chunk = self.index.to_bytes(8, "big") + self.block[8:n]
        chunk = chunk[:n]
        self.index += 1
        self.left -= len(chunk)
        self.sha.update(chunk)
        return chunk


@pytest.fixture
def cgroup() -> Iterator[MemoryCgroup]:
    with memory_cgroup(POD_LIMIT) as group:
        yield group


def limited_service(tmp_path: Path, group: MemoryCgroup, **kwargs: int) -> ResultsService:
    service = start_results_service(tmp_path, cgroup=group.path, **kwargs)
    assert str(service.pid) in (group.path / "cgroup.procs").read_text().split()
    return service


def alive(service: ResultsService) -> bool:
    return request(service, "GET", "/healthz")[0] == 200


def test_a_600_mib_upload_is_refused_at_the_door_by_default(
    tmp_path: Path, cgroup: MemoryCgroup
) -> None:
    service = limited_service(tmp_path, cgroup)  # results.maxUploadMB's default: 512
    try:
        status, body = headers_only(service, "PUT", BIG, SIZE, token_for(service, RUN_A))
        assert status == 413
        assert as_json(body)["limit"] == "results.maxUploadMB"
        assert alive(service)
        assert peak_rss(service.pid) < RSS_BOUND
    finally:
        service.stop()
    assert cgroup.oom_kills() == 0
    assert not (service.root / RUN_A.path / "db/load/1/pod-0/big.bin").exists()


def test_a_600_mib_file_is_streamed_in_and_out_under_a_512_mib_limit(
    tmp_path: Path, cgroup: MemoryCgroup
) -> None:
    service = limited_service(tmp_path, cgroup, max_upload_mb=1024)
    token = token_for(service, RUN_A)
    try:
        body = Pattern(SIZE)
        conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=120)
        conn.request("PUT", BIG, body=body, headers={
            "Authorization": f"Bearer {token}", "Content-Length": str(SIZE)})  # fmt: skip
        response = conn.getresponse()
        assert response.status == 201, response.read()
        assert as_json(response.read())["bytes"] == SIZE
        conn.close()
        stored = service.root / RUN_A.path / "db/load/1/pod-0/big.bin"
        assert stored.stat().st_size == SIZE

        conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=120)
        conn.request("GET", BIG, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        assert response.status == 200
        assert int(response.getheader("Content-Length") or 0) == SIZE
        received = hashlib.sha256()
        count = 0
        while chunk := response.read(MIB):
            received.update(chunk)
            count += len(chunk)
        conn.close()
        assert count == SIZE
        assert received.hexdigest() == body.sha.hexdigest()

        assert alive(service)
        rss = peak_rss(service.pid)
        print(f"service peak RSS {rss / MIB:.1f} MiB; cgroup peak {cgroup.peak() / MIB:.1f} MiB "
              f"(page cache included) under a {POD_LIMIT / MIB:.0f} MiB limit")  # fmt: skip
        assert rss < RSS_BOUND
    finally:
        service.stop()
    assert cgroup.oom_kills() == 0
