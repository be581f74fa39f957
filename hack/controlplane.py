"""Start the test control plane by hand: ``python hack/controlplane.py [DIR]``.

Prints the kubeconfig path and keeps etcd, kube-apiserver, controller-manager and
scheduler running until Ctrl-C, then stops each by PID.
"""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path

from dbbench_local.controlplane import running_control_plane


def main() -> int:
    workdir = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="dbbench-cp-"))
    )
    # Block the signals first so sigwait receives them instead of the default
    # action killing the script before it can stop what it started.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    with running_control_plane(workdir) as plane:
        print(f"export KUBECONFIG={plane.kubeconfig}", flush=True)
        print("control plane up; Ctrl-C stops it", flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
