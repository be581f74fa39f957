"""The runner's /metrics, scraped over HTTP while a real phase runs against MariaDB
and after it, checked against the phase's own files (summary, per-second series)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dbbench_local.ports import free_port
from dbbench_runner.running import run_step
from tests.fixtures.mariadb import MariaDBServer
from tests.support.runner_files import check_results, mariadb_target, step

pytestmark = pytest.mark.integration

# A second's figures reach /metrics once the connection has published it and its
# worker process has reported it: each once a second, not in step.
REPORTING_LAG_S = 2.0

Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples: Samples = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[s.name].append((s.labels, s.value))
    return samples


def by_operation(samples: Samples, name: str) -> dict[str, float]:
    return {labels["operation"]: value for labels, value in samples.get(name, [])}


def seconds_by_operation(out: Path) -> dict[str, list[tuple[int, int, int]]]:
    """series-seconds.csv: (epoch second, operations, errors) per operation type."""
    rows: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    with (out / "series-seconds.csv").open(newline="") as handle:
        for r in csv.DictReader(handle):
            rows[r["operation"]].append(
                (int(r["epochSecond"]), int(r["operations"]), int(r["errors"]))
            )
    return rows


def test_metrics_follow_the_phase_and_end_equal_to_its_summary(
    mariadb: MariaDBServer, tmp_path: Path
) -> None:
    database = f"m_{uuid.uuid4().hex[:12]}"
    target = mariadb_target(mariadb, database)
    assert run_step(step(target, "ycsb", 2000, {"type": "insert"}), tmp_path / "load") == 0
    config = {
        "target": target,
        "dataset": {"shape": "ycsb", "records": 2000, "seed": 7},
        "phase": {
            "name": "mixed",
            "type": "mix",
            "mix": {"read": 7, "update": 3},
            "duration": "6s",
            "warmup": "1s",
            "targetRate": 1500,
        },
        "repeat": 2,
        "threads": 4,
        "processes": 2,
        "progressEvery": 1,
    }
    path = tmp_path / "step.yaml"
    path.write_text(yaml.safe_dump(config))
    out, port = tmp_path / "run", free_port()
    command = [sys.executable, "-m", "dbbench_runner", "run", "--config", str(path), "--out",
               str(out), "--metrics-port", str(port), "--metrics-linger", "20",
               "--metrics-address", "127.0.0.1"]  # fmt: skip
    during: list[tuple[float, float, Samples]] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        try:
            deadline = time.monotonic() + 90
            while not (out / "summary.json").exists():
                assert p.poll() is None, p.communicate()
                assert time.monotonic() < deadline, "no summary.json"
                before = time.time()
                try:
                    samples = scrape(port)
                except OSError:  # not listening yet
                    samples = {}
                if samples:
                    during.append((before, time.time(), samples))
                time.sleep(0.5)
            after = scrape(port)
            assert p.poll() is None, "the endpoint must linger after the phase"
            p.terminate()
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
    summary = json.loads((out / "summary.json").read_text())
    check_results(out, operations=summary["operations"])
    by_type = summary["operationsByType"]
    assert set(by_type) == {"read", "update"}

    # After the phase: the totals are the summary's, exactly.
    assert by_operation(after, "dbbench_runner_operations_total") == {
        k: v["operations"] for k, v in by_type.items()
    }
    assert by_operation(after, "dbbench_runner_errors_total") == {
        k: v["errors"] for k, v in by_type.items()
    }
    assert by_operation(after, "dbbench_runner_latency_seconds_count") == {
        k: v["operations"] for k, v in by_type.items()
    }
    for labels, value in after["dbbench_runner_phase_latency_seconds"]:
        expected = by_type[labels["operation"]]["latencyMs"]
        for quantile, name in (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99")):
            if labels["quantile"] == quantile:
                assert value * 1000 == pytest.approx(expected[name], rel=1e-9)
    assert after["dbbench_runner_phase_ended"][0][1] == 1
    labels = after["dbbench_runner_operations_total"][0][0]
    assert {k: labels[k] for k in ("target", "phase", "repeat")} == {
        "target": "mariadb", "phase": "mixed", "repeat": "2",
    }  # fmt: skip

    # During the phase: the figures grew while it ran, and each scrape holds the
    # seconds that had ended a reporting lag before it, and nothing later.
    seconds = seconds_by_operation(out)
    live = [(b, a, s) for b, a, s in during if by_operation(s, "dbbench_runner_operations_total")]
    assert len(live) >= 4, "too few scrapes while the phase ran"
    totals = [sum(by_operation(s, "dbbench_runner_operations_total").values()) for *_, s in live]
    assert totals == sorted(totals)
    assert totals[0] < totals[-1] <= summary["operations"]
    for before, after_time, samples in live:
        ended = before - 1 - REPORTING_LAG_S
        for kind, scraped in by_operation(samples, "dbbench_runner_operations_total").items():
            at_least = sum(n for second, n, _ in seconds[kind] if second + 1 <= ended)
            at_most = sum(n for second, n, _ in seconds[kind] if second < after_time)
            assert at_least <= scraped <= at_most, (kind, at_least, scraped, at_most)
