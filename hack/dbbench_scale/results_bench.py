"""make scale's results-service part alone (section 5 of hack/scale.py), no cluster.

    python -m dbbench_scale.results_bench [PODS ...]   # default: 8 64

Starts the results service as make scale does (dbbench_local.results_service),
uploads and merges one step of each pod count, then writes a run summary of
100 steps and waits for its report. The same figures as make scale's section
5, in a minute or two instead of its 20: for working on the merge and report.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from dbbench_local.results_service import running_results_service
from dbbench_operator.settings import OperatorSettings
from dbbench_scale import results_side

MERGE_PHASE_S = 60.0  # as hack/scale.py: one interval histogram per second and kind
OPERATIONS = 12_000


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [8, 64]
    with tempfile.TemporaryDirectory(prefix="dbbench-results-bench-") as tmp:
        workdir = Path(tmp)
        with running_results_service(workdir / "results-bench") as service:
            settings = OperatorSettings(results_url=service.url, results_key=service.key)
            load = results_side.PodLoad(OPERATIONS, MERGE_PHASE_S)
            pods_dir = workdir / "pods"
            # A first merge loads the merge code: the figures then compare merges alone.
            results_side.merge_step_of(settings, service.pid, pods_dir, 1, load)
            for pods in sizes:
                f = results_side.merge_step_of(settings, service.pid, pods_dir, pods, load)
                print(f"merge of {f.pods:>3} pods ({f.upload_mb:4.1f} MB uploaded): "
                      f"{f.merge_s:6.2f} s, service RSS {f.rss_before_mb:.0f} MB before, "
                      f"peak {f.peak_rss_mb:.0f} MB", flush=True)  # fmt: skip
            s = results_side.run_summary(settings, service.pid, service.root, workdir, 5.0)
            print(f"run summary of {s.steps} steps: written in {s.write_s:.2f} s, report "
                  f"rendered {s.report_s:.2f} s later; service RSS {s.rss_before_mb:.0f} MB "
                  f"before, peak {s.peak_rss_mb:.0f} MB", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
