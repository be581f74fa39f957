"""The results service's /metrics, scraped over HTTP from the real service while a
real runner's files are uploaded and merged (and refused, and merged too early)."""

from __future__ import annotations

import os
import socket
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from dbbench_local.ports import free_port
from dbbench_local.results_service import ResultsService, start_results_service
from dbbench_runner.running import run_step
from dbbench_runner.uploading import Destination, upload_results
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.results_service import RUN_A, headers_only, request, token_for
from tests.support.runner_files import mariadb_target, step

pytestmark = pytest.mark.integration

Samples = dict[str, dict[str, float]]


@pytest.fixture
def metered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ResultsService, int]]:
    port = free_port()
    service = start_results_service(
        tmp_path_factory.mktemp("results"), max_upload_mb=1,
        extra_args=("--metrics-port", str(port)),
    )  # fmt: skip
    try:
        yield service, port
    finally:
        service.stop()


def scrape(port: int) -> Samples:
    """Samples by name, then by their `outcome` label ('' when they have none)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, {})[s.labels.get("outcome", "")] = s.value
    return samples


def test_uploads_merges_and_the_claim_are_counted(
    metered: tuple[ResultsService, int], mariadb: MariaDBServer, tmp_path: Path
) -> None:
    service, port = metered
    empty = scrape(port)
    assert empty["dbbench_results_uploads_total"] == {"stored": 0, "refused": 0, "failed": 0}
    assert empty["dbbench_results_merges_total"] == {"merged": 0, "incomplete": 0, "failed": 0}

    # A real pod's files, uploaded as a runner does, then merged.
    out = tmp_path / "pod"
    target = mariadb_target(mariadb, f"u_{uuid.uuid4().hex[:12]}")
    assert run_step(step(target, "ycsb", 200, {"type": "insert"}), out) == 0
    token = token_for(service, RUN_A)
    destination = Destination(url=service.url, token=token, run=RUN_A.path, step="db/load/1", pod=0)
    files = upload_results(destination, out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    steps = f"/v1/runs/{RUN_A.path}/steps"
    assert request(service, "POST", f"{steps}/db/load/1/merge?pods=1", token=token)[0] == 200
    assert request(service, "POST", f"{steps}/db/reads/1/merge?pods=1", token=token)[0] == 409
    too_big = service.max_upload_mb * 1024 * 1024 + 1
    path = f"/v1/runs/{RUN_A.path}/files/db/load/1/pod-0/extra.bin"
    assert headers_only(service, "PUT", path, too_big, token)[0] == 413

    samples = scrape(port)
    assert samples["dbbench_results_uploads_total"] == {
        "stored": files, "refused": 1, "failed": 0,
    }  # fmt: skip
    assert samples["dbbench_results_upload_bytes_total"][""] == size
    assert samples["dbbench_results_merges_total"] == {"merged": 1, "incomplete": 1, "failed": 0}
    assert samples["dbbench_results_merge_duration_seconds_count"][""] == 2
    stat = os.statvfs(service.root)
    assert samples["dbbench_results_claim_capacity_bytes"][""] == stat.f_blocks * stat.f_frsize
    assert 0 < samples["dbbench_results_claim_free_bytes"][""] <= stat.f_blocks * stat.f_frsize


def test_a_taken_metrics_port_leaves_the_service_taking_uploads(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        workdir = tmp_path_factory.mktemp("results")
        service = start_results_service(workdir, extra_args=("--metrics-port", str(port)))
        try:
            path = f"/v1/runs/{RUN_A.path}/files/db/load/1/pod-0/x.txt"
            assert (
                request(service, "PUT", path, body=b"x", token=token_for(service, RUN_A))[0] == 201
            )
        finally:
            service.stop()
    assert f"/metrics not served on 127.0.0.1:{port}" in service.log.read_text()
