"""Install the dbbench chart on a cluster and watch BenchmarkRuns: what
`make demo` and the end-to-end tests do, with the same helm and kubectl."""

from __future__ import annotations

import codecs
import json
import os
import select
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbbench_contract.api import PhaseResult
from dbbench_contract.run_summary import not_found_cell
from dbbench_local.cluster import IMAGES_DIR, node_images_built_here
from dbbench_local.controlplane import REPO, tool

RELEASE = "dbbench"
NAMESPACE = "dbbench-system"
TERMINAL = ("Succeeded", "Failed")
# Images imported straight into the node's runtime (`ctr import`, `kind load`):
# never pulled, since no registry holds them.
LOCAL_IMAGES = ("image.pullPolicy=Never", "runner.image.pullPolicy=Never")
# Archives of hack/cluster/images.sh that are an engine's default image on the
# local node: the chart's `engines` values point there, so a manifest without
# `image`/`version` runs as on any cluster. MongoDB has none (the FerretDB
# stand-in is chosen explicitly: `image` + `protocolStandIn`).
NODE_ENGINE_ARCHIVES = {
    "mariadb.tar": "mariadb",
    "mysql.tar": "mysql",
    "postgresql.tar": "postgresql",
}


def engine_image_values(manifest: Path) -> list[str]:
    """`engines.<engine>.repository=...`/`.version=...` for `--set-string`, from the
    `<archive> <reference>` lines of images.sh's manifest (none without one)."""
    if not manifest.is_file():
        return []
    values: list[str] = []
    for line in manifest.read_text().splitlines():
        archive, _, reference = line.strip().partition(" ")
        engine = NODE_ENGINE_ARCHIVES.get(archive)
        if engine is None:
            continue
        repository, _, tag = reference.strip().rpartition(":")
        if not repository or "/" not in repository:
            raise RuntimeError(f"{manifest}: {archive} has no repository:tag reference: {line!r}")
        values += [f"engines.{engine}.repository={repository}", f"engines.{engine}.version={tag}"]
    return values


def node_engine_images() -> list[str]:
    """The engine images built here, on the local node and kind through podman
    (kind's node on Docker pulls the official ones)."""
    return engine_image_values(IMAGES_DIR / "manifest.txt") if node_images_built_here() else []


@dataclass(frozen=True)
class Kube:
    """kubectl and helm against one cluster (a kubeconfig)."""

    kubeconfig: Path

    def kubectl(
        self, *args: str, check: bool = True, stdin: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [tool("kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result

    def helm(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        home = Path(os.environ.get("TMPDIR", "/tmp")) / "dbbench-helm"
        env = {
            **os.environ,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }
        result = subprocess.run(
            [tool("helm"), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True, text=True, timeout=timeout, check=False, env=env,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"helm {' '.join(args)} failed:\n{result.stderr}")
        return result

    def get(self, *args: str) -> dict[str, Any] | None:
        result = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None


def install_chart(kube: Kube, values: Sequence[str] = (), strings: Sequence[str] = ()) -> None:
    """`helm upgrade --install` of the repository's chart, waiting until it is ready;
    `strings` are set as strings (`--set-string`: an image tag 9.7 is no number)."""
    kube.helm(
        "upgrade", "--install", RELEASE, str(REPO), "--namespace", NAMESPACE,
        "--create-namespace", "--wait", "--timeout", "5m", *(f"--set={v}" for v in values),
        *(f"--set-string={v}" for v in strings),
    )  # fmt: skip


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, every: float = 2.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


# Before watching again once a watch ended (the object is not there yet, the API
# server closed the watch or was unreachable).
REWATCH_S = 1.0


def _watched(kube: Kube, args: Sequence[str], deadline: float) -> Iterator[dict[str, Any]]:
    """The objects one `kubectl get --watch -o json` prints (the current one, then
    each change) until the watch ends; TimeoutError at `deadline`."""
    command = [tool("kubectl"), f"--kubeconfig={kube.kubeconfig}", "get", *args,
               "--watch", "--output=json"]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    text, decoder, utf8 = "", json.JSONDecoder(), codecs.getincrementaldecoder("utf-8")()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return  # the watch ended
            text += utf8.decode(chunk)
            while text.strip():
                try:
                    obj, end = decoder.raw_decode(text.lstrip())
                except json.JSONDecodeError:
                    break  # the rest of the object is still on its way
                text = text.lstrip()[end:]
                yield obj
    finally:
        proc.kill()
        proc.wait()


def watch_for(
    kube: Kube, args: Sequence[str], predicate: Callable[[dict[str, Any]], Any],
    timeout: float, what: str,
) -> Any:  # fmt: skip
    """The first truthy `predicate(obj)` over what `kubectl get ARGS --watch` shows:
    `wait_for` without polling, so a wait ends as the object changes. A watch that
    ends (the object not there yet, the API server gone for a while) is started
    again; TimeoutError after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for obj in _watched(kube, args, deadline):
                value = predicate(obj)
                if value:
                    return value
        except TimeoutError:
            break
        time.sleep(min(REWATCH_S, max(0.0, deadline - time.monotonic())))
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def wait_for_run(
    kube: Kube, namespace: str, name: str, timeout: float,
    on_change: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Poll a BenchmarkRun until it ends; `on_change` sees each new progress line."""
    last = ""

    def ended() -> dict[str, Any] | None:
        nonlocal last
        run = kube.get("benchmarkrun", name, "-n", namespace)
        if run is None:
            return None
        status = run.get("status") or {}
        line = f"{status.get('phase')} {status.get('message', '')}"
        if on_change is not None and line != last:
            on_change(run)
        last = line
        return run if status.get("phase") in TERMINAL else None

    result: dict[str, Any] = wait_for(ended, timeout, f"BenchmarkRun {namespace}/{name} to end")
    return result


def _ms(value: object) -> str:
    return "-" if value is None else f"{float(str(value)):.2f}"


def summary_table(run: dict[str, Any]) -> str:
    """The run's results from its status, one line per target, phase and repeat."""
    status = run.get("status") or {}
    header = ("TARGET", "PHASE", "REPEAT", "OPERATIONS", "ERRORS", "NOT FOUND", "OPS/S",
              "RECORDS/S", "P50 MS", "P95 MS", "P99 MS", "P99.9 MS", "MAX MS")  # fmt: skip
    rows = [header]
    for target in status.get("targets") or []:
        for raw in target.get("phases") or []:
            phase = PhaseResult.model_validate(raw)
            latency = phase.latency_ms
            records = phase.records_per_second
            rows.append((
                target["name"], phase.name, str(phase.repeat),
                f"{phase.operations:,}", str(phase.errors), not_found_cell(phase),
                f"{phase.throughput:,.1f}",
                "-" if records is None else f"{records:,.1f}",
                *(_ms(None if latency is None else getattr(latency, k))
                  for k in ("p50", "p95", "p99", "p999", "max")),
            ))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
             for row in rows]  # fmt: skip
    meta = run["metadata"]
    title = (
        f"BenchmarkRun {meta['namespace']}/{meta['name']}: {status.get('phase')}"
        f" ({status.get('startedAt', '?')} .. {status.get('completedAt', '?')})"
    )
    footer = f"results on the cluster's results claim: {status.get('resultsPath', '-')}"
    if status.get("phase") == "Failed":
        footer = f"failed: {status.get('message', '')}\n{footer}"
    return "\n".join([title, *lines, footer])
