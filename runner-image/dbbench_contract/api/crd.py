"""The BenchmarkRun CustomResourceDefinition, generated from the models.

``build_crd()`` is pure; ``hack/gen_crd.py`` writes it to ``crds/``.
"""

from __future__ import annotations

from typing import Any

from .spec import BenchmarkRunSpec
from .status import BenchmarkRunStatus
from .structural import to_structural

GROUP = "dbbench.io"
VERSION = "v1alpha1"
KIND = "BenchmarkRun"
PLURAL = "benchmarkruns"
SINGULAR = "benchmarkrun"
CRD_NAME = f"{PLURAL}.{GROUP}"
API_VERSION = f"{GROUP}/{VERSION}"

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {
        "name": "Phase",
        "type": "string",
        "jsonPath": ".status.phase",
        "description": "Lifecycle phase of the run.",
    },
    {
        "name": "Target",
        "type": "string",
        "jsonPath": ".status.progress.target",
        "description": "Target being benchmarked.",
    },
    {
        "name": "Progress",
        "type": "integer",
        "jsonPath": ".status.progress.percent",
        "description": "Percent of the run done.",
    },
    {
        "name": "Throughput",
        "type": "number",
        "jsonPath": ".status.lastResult.throughput",
        "description": "Operations/s of the last finished phase.",
    },
    {
        "name": "p99",
        "type": "number",
        "jsonPath": ".status.lastResult.p99Ms",
        "description": "p99 latency (ms) of the last finished phase.",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


# A started run's results describe the spec it started with: editing it
# mid-run (a shorter timeout, another phase) would leave results that match
# neither. Runs still waiting in Pending (e.g. for exclusive nodes) may be edited.
IMMUTABLE_ONCE_STARTED: dict[str, str] = {
    "rule": ("!has(oldSelf.status) || !has(oldSelf.status.startedAt) || self.spec == oldSelf.spec"),
    "message": (
        "spec is immutable once the run has started (status.startedAt is set): delete the "
        "BenchmarkRun and create it again with the new spec"
    ),
    "reason": "FieldValueForbidden",
    "fieldPath": ".spec",
}


def spec_schema() -> dict[str, Any]:
    return to_structural(BenchmarkRunSpec.model_json_schema(by_alias=True))


def status_schema() -> dict[str, Any]:
    return to_structural(BenchmarkRunStatus.model_json_schema(by_alias=True))


def build_crd() -> dict[str, Any]:
    """The full CRD manifest (apiextensions.k8s.io/v1) as a plain dict."""
    root = {
        "description": (
            "A reproducible database benchmark: the operator deploys each target database on "
            "the given hardware, runs the phases from runner pods, and reports the results."
        ),
        "type": "object",
        "required": ["spec"],
        "x-kubernetes-validations": [IMMUTABLE_ONCE_STARTED],
        "properties": {
            "apiVersion": {"type": "string", "description": "dbbench.io/v1alpha1"},
            "kind": {"type": "string", "description": "BenchmarkRun"},
            "metadata": {"type": "object"},
            "spec": spec_schema(),
            "status": status_schema(),
        },
    }
    return crd_manifest(KIND, PLURAL, SINGULAR, "br", printer_columns=PRINTER_COLUMNS, root=root)


def crd_manifest(
    kind: str, plural: str, singular: str, short_name: str, *,
    printer_columns: list[dict[str, Any]], root: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """A namespaced dbbench CRD of one served, stored version with a status
    subresource (the run's and the schedule's alike)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/name": "dbbench", "app.kubernetes.io/part-of": "dbbench"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                "shortNames": [short_name],
                "categories": ["dbbench"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": printer_columns,
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }
