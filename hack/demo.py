"""`make demo`: install the chart on the local cluster, run examples/quickstart.yaml,
print its summary table, fetch its results into demo-results/quickstart/ with
`dbbench fetch` (as a user would: through the API server's service proxy, with
the cluster's kubeconfig) and print the path of the local report.html.

The cluster is already up (the Makefile brings it up first). A quickstart run
left by an earlier demo is deleted first: a run's spec cannot change once it
has started, so each demo is a new run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from dbbench_local.cluster import chosen
from dbbench_local.controlplane import REPO
from dbbench_local.install import (
    LOCAL_IMAGES,
    Kube,
    install_chart,
    node_engine_images,
    summary_table,
    wait_for_run,
)

RUN = "quickstart"
NAMESPACE = "default"
# Outside .cluster/: `make cluster-down` removes the cluster and its results
# claim, the fetched copy stays.
LOCAL = REPO / "demo-results" / RUN


def say(message: str) -> None:
    print(f"demo: {message}", file=sys.stderr, flush=True)


def main() -> int:
    kube = Kube(chosen().kubeconfig)
    say("installing the chart with helm (about a minute)")
    install_chart(kube, LOCAL_IMAGES, node_engine_images())
    kube.kubectl("delete", "benchmarkrun", RUN, "-n", NAMESPACE, "--ignore-not-found",
                 "--wait=true", timeout=300)  # fmt: skip
    kube.kubectl("apply", "-n", NAMESPACE, "-f", str(REPO / "examples" / "quickstart.yaml"))
    say(f"applied examples/quickstart.yaml; waiting for it to end (about 3 minutes): "
        f"kubectl get br {RUN} -w")  # fmt: skip
    started = time.monotonic()

    def show(run: dict[str, Any]) -> None:
        status = run.get("status") or {}
        progress = status.get("progress") or {}
        detail = " ".join(f"{k}={v}" for k, v in progress.items() if v is not None)
        # A run the operator has not seen yet has no status: say so, not "None".
        phase = status.get("phase") or "(accepted, not yet seen by the operator)"
        say(f"{time.monotonic() - started:5.0f}s {phase} {detail}".rstrip())

    run = wait_for_run(kube, NAMESPACE, RUN, timeout=20 * 60, on_change=show)
    print(summary_table(run))
    report = fetch_locally(str(chosen().kubeconfig), LOCAL)
    print(f"local results: {LOCAL.relative_to(REPO)}/\nreport: {report}\n"
          f"open it: xdg-open {report}  (or python3 -m webbrowser file://{report})")  # fmt: skip
    return 0 if (run.get("status") or {}).get("phase") == "Succeeded" else 1


def fetch_locally(kubeconfig: str, out: Path) -> Path:
    """`dbbench fetch` then `dbbench report` (a report in this checkout's style even
    if the service rendered an older one); the local report.html's absolute path."""
    if out.exists():
        shutil.rmtree(out)  # an earlier demo's run
    dbbench = [sys.executable, "-m", "dbbench_cli", "--kubeconfig", kubeconfig, "-n", NAMESPACE]
    for args in (["fetch", RUN, "--out", str(out)], ["report", str(out)]):
        done = subprocess.run([*dbbench, *args], check=False, timeout=300)
        if done.returncode != 0:  # the CLI's own error, naming the fix, is printed above
            raise SystemExit(f"demo: `dbbench {' '.join(args)}` failed ({done.returncode})")
    report = (out / "report.html").resolve()
    if not report.is_file():
        raise SystemExit(f"demo: dbbench fetch left no {report}")
    return report


if __name__ == "__main__":
    raise SystemExit(main())
