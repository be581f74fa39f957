"""The BenchmarkSchedule CustomResourceDefinition, generated from the models
(``hack/gen_crd.py`` writes it to ``crds/`` beside the run's)."""

from __future__ import annotations

from typing import Any

from .crd import API_VERSION, GROUP, crd_manifest
from .schedule import MAX_SCHEDULE_NAME, BenchmarkScheduleSpec, BenchmarkScheduleStatus
from .structural import to_structural

KIND = "BenchmarkSchedule"
PLURAL = "benchmarkschedules"
SINGULAR = "benchmarkschedule"
CRD_NAME = f"{PLURAL}.{GROUP}"

__all__ = ["API_VERSION", "CRD_NAME", "KIND", "PLURAL", "build_schedule_crd"]

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule",
     "description": "The cron expression."},
    {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend",
     "description": "No new runs while true."},
    {"name": "Active", "type": "string", "jsonPath": ".status.active",
     "description": "Runs of the schedule not yet ended."},
    {"name": "Last Run", "type": "string", "jsonPath": ".status.lastRun",
     "description": "The last run started."},
    {"name": "Next Run", "type": "string", "jsonPath": ".status.nextScheduleTime",
     "description": "The next scheduled time."},
    {"name": "Verdict", "type": "string", "jsonPath": ".status.latestVerdict.reason",
     "description": "Change-point verdict of the series' latest finished run."},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]  # fmt: skip

# The run names `<schedule>-<unix minutes>` and the series label value must stay
# within 63 characters (CronJob limits its names to 52 for its Jobs' sake). No
# fieldPath: the API server takes none into metadata, so the message names the field.
NAME_FITS: dict[str, str] = {
    "rule": f"self.metadata.name.size() <= {MAX_SCHEDULE_NAME}",
    "message": (
        f"metadata.name: at most {MAX_SCHEDULE_NAME} characters, so that its runs' names "
        "(<schedule>-<unix minutes>) and their dbbench.io/series label fit in 63; use a "
        "shorter name"
    ),
    "reason": "FieldValueInvalid",
}


def build_schedule_crd() -> dict[str, Any]:
    """The full CRD manifest (apiextensions.k8s.io/v1) as a plain dict."""
    root = {
        "description": (
            "BenchmarkRuns made from a template on a cron schedule, with CronJob's semantics: "
            "each run is owned by the schedule, named <schedule>-<unix minutes> and labelled "
            "dbbench.io/series=<schedule> (its series)."
        ),
        "type": "object",
        "required": ["spec"],
        "x-kubernetes-validations": [NAME_FITS],
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION},
            "kind": {"type": "string", "description": KIND},
            "metadata": {"type": "object"},
            "spec": to_structural(BenchmarkScheduleSpec.model_json_schema(by_alias=True)),
            "status": to_structural(BenchmarkScheduleStatus.model_json_schema(by_alias=True)),
        },
    }
    return crd_manifest(KIND, PLURAL, SINGULAR, "bs", printer_columns=PRINTER_COLUMNS, root=root)
