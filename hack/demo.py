"""`make demo`: install the chart on the local cluster, run examples/quickstart.yaml,
print its summary table.

The cluster is already up (the Makefile brings it up first). A quickstart run
left by an earlier demo is deleted first: a run's spec cannot change once it
has started, so each demo is a new run.
"""

from __future__ import annotations

import sys
import time
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
    return 0 if (run.get("status") or {}).get("phase") == "Succeeded" else 1


if __name__ == "__main__":
    raise SystemExit(main())
