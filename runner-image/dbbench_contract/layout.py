"""Where results live: a run's directory and the files in it (pure paths).

    <namespace>/<run>/<uid>/                      the run (status.resultsPath under the claim)
        summary.json                              the run's summary (run_summary.RunSummary)
        report.html                               rendered from the files
        <target>/<phase>/<repeat>/                one step
            summary.json, environment.json, ...   merged over the step's pods
            nodes.json                            the nodes its pods ran on (the operator's)
            pod-<index>/                          what runner pod <index> uploaded

A step's directory holds the same file names as each of its pods' directories.
"""

from __future__ import annotations

SUMMARY = "summary.json"
ENVIRONMENT = "environment.json"
NODES = "nodes.json"
PROGRESS = "progress.json"
HISTOGRAMS = "histograms"
CHECKPOINTS = "checkpoints.csv"
SERIES_OPS = "series-ops.csv"
SERIES_SECONDS = "series-seconds.csv"
STORAGE = "storage.csv"
REPORT = "report.html"
# What a finished step's directory must hold for the report to read it.
STEP_FILES = (SUMMARY, ENVIRONMENT, SERIES_OPS, SERIES_SECONDS)
POD_PREFIX = "pod-"


def run_prefix(namespace: str, name: str, uid: str) -> str:
    """``<namespace>/<run>/<uid>``: a run's directory under the results root."""
    return f"{namespace}/{name}/{uid}"


def step_dir(target: str, phase: str, repeat: int) -> str:
    """``<target>/<phase>/<repeat>``: a step's directory inside its run's."""
    return f"{target}/{phase}/{repeat}"


def pod_dir(index: int) -> str:
    """``pod-<index>``: one runner pod's uploads inside its step's directory."""
    return f"{POD_PREFIX}{index}"


def histogram_file(operation: str) -> str:
    return f"{HISTOGRAMS}/{operation}.hlog"
