"""A private Prometheus on the host that scrapes the node's pods.

Debian's `prometheus` (installed by `make tools`), as in
tests/integration/chart/test_dashboard_prometheus.py. Debian builds it without Kubernetes
discovery (`kubernetes_sd_configs` is an unknown field there), so the pods
are found here, with kubectl, as docs/metrics.md's pod discovery would find
them (pods labelled `app.kubernetes.io/name: dbbench`, a container port named
`metrics`), and handed to Prometheus as a file_sd file rewritten every second.
Pod IPs are reachable from the host through the node's bridge, so Prometheus
scrapes the pods directly, as one inside the cluster would.
"""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dbbench_local.install import Kube
from tests.fixtures.prometheus import prometheus, query

__all__ = ["by_labels", "discovering", "prometheus", "query", "scrape_config", "targets"]

LIVE_POD_PHASES = ("Pending", "Running")


def scrape_config(targets_file: Path, interval_s: int) -> dict[str, Any]:
    """One job whose targets are the file's (pure)."""
    return {
        "global": {"scrape_interval": f"{interval_s}s", "evaluation_interval": f"{interval_s}s"},
        "scrape_configs": [{
            "job_name": "dbbench",
            "file_sd_configs": [{"files": [str(targets_file)], "refresh_interval": "1s"}],
        }],
    }  # fmt: skip


def file_sd_targets(pods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """file_sd entries for the `metrics` ports of live pods that have an IP, with
    `namespace` and `pod` labels, as docs/metrics.md's relabelling keeps them (pure)."""
    entries = []
    for pod in pods:
        meta, status = pod["metadata"], pod.get("status") or {}
        labels = meta.get("labels") or {}
        if labels.get("app.kubernetes.io/name") != "dbbench" or not status.get("podIP"):
            continue
        if status.get("phase") not in LIVE_POD_PHASES:
            continue
        for container in pod["spec"]["containers"]:
            for port in container.get("ports") or []:
                if port.get("name") == "metrics":
                    entries.append({
                        "targets": [f"{status['podIP']}:{port['containerPort']}"],
                        "labels": {"namespace": meta["namespace"], "pod": meta["name"]},
                    })  # fmt: skip
    return sorted(entries, key=lambda e: str(e["targets"]))


@contextmanager
def discovering(
    kube: Kube, targets_file: Path, selectors: dict[str, str], every: float = 1.0
) -> Iterator[None]:
    """Rewrites the targets file every `every` seconds while the block runs, from
    the pods of each namespace matching its label selector."""
    stop = threading.Event()

    def refresh() -> None:
        written = None
        while not stop.is_set():
            pods: list[dict[str, Any]] = []
            try:
                for namespace, selector in selectors.items():
                    listed = kube.get("pods", "-n", namespace, "-l", selector) or {"items": []}
                    pods += listed["items"]
            except (RuntimeError, subprocess.TimeoutExpired):
                stop.wait(every)  # the API busy: the last file stands
                continue
            entries = file_sd_targets(pods)
            if entries != written:
                # Atomically: Prometheus may read the file while it is written.
                partial = targets_file.with_suffix(".tmp")
                partial.write_text(json.dumps(entries))
                partial.replace(targets_file)
                written = entries
            stop.wait(every)

    targets_file.write_text("[]")
    thread = threading.Thread(target=refresh, name="file-sd", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=60)


def by_labels(result: list[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    """A vector as {(label values...): value} (pure)."""
    return {
        tuple(sample["metric"].get(label, "") for label in labels): float(sample["value"][1])
        for sample in result
    }


def targets(url: str) -> list[dict[str, Any]]:
    """The active targets, with their last scrape's error (for failure messages)."""
    with urllib.request.urlopen(f"{url}/api/v1/targets?state=active", timeout=10) as response:
        active: list[dict[str, Any]] = json.loads(response.read())["data"]["activeTargets"]
    return [{"pod": t["labels"].get("pod"), "health": t["health"], "error": t.get("lastError")}
            for t in active]  # fmt: skip
