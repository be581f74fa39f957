"""The BenchmarkRun API (dbbench.io/v1alpha1): typed spec and status models,
the CRD generated from them, and the semantic checks CEL cannot express.

The operator's boundary is ``parse_spec(body["spec"])`` (raises ``SpecError``)
followed by ``check(spec)`` (returns ``Problem``s); status is written as
``BenchmarkRunStatus(...).model_dump(by_alias=True, exclude_none=True, mode="json")``.

``admission.check_manifest(doc)`` runs every admission check of a manifest
offline (the API server's schema and CEL rules, then the operator's); it is
imported on its own (by ``dbbench check``), not from here: it needs a CEL
evaluator the operator does not.
"""

from .base import Problem, Rule, SpecError
from .connections import mysql_connections_needed
from .crd import API_VERSION, CRD_NAME, GROUP, KIND, PLURAL, VERSION, build_crd
from .mix import Mix
from .phases import Distribution, Phase
from .placement import Hardware, Resources, Runner, Storage, TargetHardware, Toleration
from .semantics import check, memory_limit, planned_seconds
from .spec import (
    BENCHMARK_DATABASE,
    DATASET_COLLECTIONS,
    BenchmarkRunSpec,
    Dataset,
    Results,
    parse_spec,
    rule_problems,
)
from .status import (
    BenchmarkRunStatus,
    Condition,
    LastResult,
    Latency,
    PhaseResult,
    Progress,
    RunPhase,
    StorageUsage,
    TargetResult,
)
from .targets import (
    ALLOWED_SETTINGS,
    DEFAULT_MEMBERS,
    DEFAULT_REPOSITORIES,
    DEFAULT_VERSIONS,
    External,
    SecretKeyRef,
    Target,
)
from .units import (
    Duration,
    format_duration,
    parse_mysql_size,
    parse_postgres_size,
    parse_quantity,
)

__all__ = [
    "ALLOWED_SETTINGS",
    "API_VERSION",
    "BENCHMARK_DATABASE",
    "CRD_NAME",
    "DATASET_COLLECTIONS",
    "DEFAULT_MEMBERS",
    "DEFAULT_REPOSITORIES",
    "DEFAULT_VERSIONS",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "BenchmarkRunSpec",
    "BenchmarkRunStatus",
    "Condition",
    "Dataset",
    "Distribution",
    "Duration",
    "External",
    "Hardware",
    "LastResult",
    "Latency",
    "Mix",
    "Phase",
    "PhaseResult",
    "Problem",
    "Progress",
    "Resources",
    "Results",
    "Rule",
    "RunPhase",
    "Runner",
    "SecretKeyRef",
    "SpecError",
    "Storage",
    "StorageUsage",
    "Target",
    "TargetHardware",
    "TargetResult",
    "Toleration",
    "build_crd",
    "check",
    "format_duration",
    "memory_limit",
    "mysql_connections_needed",
    "parse_mysql_size",
    "parse_postgres_size",
    "parse_quantity",
    "parse_spec",
    "planned_seconds",
    "rule_problems",
]
