"""Every admission check of a BenchmarkRun or BenchmarkSchedule manifest, offline:
`check_manifest`.

What `kubectl create -f` then the operator would say, in their order:

1. the API server's strict field validation: unknown fields, and nothing else
   (the request fails before validation);
2. structural defaulting, metadata.name, the CRD's OpenAPI schema and its
   list-type invariants (`apiserver.py`);
3. the CRD's CEL rules (`cel_rules.py`), unless step 2 found an error of a
   type that stops them (the API server then adds one error saying so);
4. for an object the API server would accept: the operator's own checks on
   the stored (defaulted) spec, `parse_spec` and the semantic checks
   (`semantics.check`, the results claim).

Pure: the CRD schema comes from the models (`build_crd`, which `crds/` is
generated from and checked against). `dbbench check` is its command line;
tests run the same files through the real kube-apiserver and the operator
and compare the field paths and messages. A BenchmarkSchedule goes through the
same steps with its own CRD; step 4 is `schedule.operator_problems` (its cron
expression, zone and template, as the operator's tick checks them).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from .apiserver import (
    BLOCKING,
    FieldError,
    Schema,
    defaulted,
    list_type_errors,
    metadata_errors,
    schema_errors,
    unknown_fields,
)
from .base import Problem, SpecError
from .cel_rules import rule_errors
from .crd import API_VERSION, KIND, build_crd
from .expectation_checks import series_problems
from .schedule import operator_problems as schedule_problems
from .schedule import parse_schedule_spec
from .schedule_crd import KIND as SCHEDULE_KIND
from .schedule_crd import build_schedule_crd
from .semantics import check, results_claim_problems
from .spec import parse_spec

# The chart's default results.claimName (values.yaml); the operator refuses any other.
DEFAULT_RESULTS_CLAIM = "dbbench-results"

# customresource strategy: added once when a blocking error kept the CEL rules from running.
RULES_NOT_CHECKED = FieldError(
    "Invalid", "<nil>",
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation",
    None,
)  # fmt: skip


@lru_cache(maxsize=1)
def crd_schema() -> Schema:
    """The BenchmarkRun's openAPIV3Schema, as `crds/` holds it."""
    schema: Schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@lru_cache(maxsize=1)
def schedule_crd_schema() -> Schema:
    """The BenchmarkSchedule's openAPIV3Schema, as `crds/` holds it."""
    schema: Schema = build_schedule_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _json_like(value: Any) -> Any:
    """What kubectl sends for a YAML value: JSON, where an integral float is an integer
    (sigs.k8s.io/yaml marshals 1.0 as 1) and dates are strings."""
    if isinstance(value, dict):
        return {str(k): _json_like(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_like(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def api_server_problems(doc: Mapping[str, Any], schema: Schema | None = None) -> list[Problem]:
    """What the API server refuses a create of `doc` with (steps 1-3 above); `schema`:
    its CRD's (the BenchmarkRun's unless given)."""
    body = _json_like(dict(doc))
    schema = schema or crd_schema()
    unknown = list(unknown_fields(body, schema))
    if unknown:
        return [Problem(path, f'unknown field "{path}"') for path in unknown]
    body.pop("status", None)  # a create resets status (the status subresource is on)
    body = defaulted(body, schema)
    errors = [
        *metadata_errors(body.get("metadata")),
        *schema_errors(body, schema),
        *list_type_errors(body, schema),
    ]
    if any(error.type in BLOCKING for error in errors):
        errors.append(RULES_NOT_CHECKED)
    else:
        errors.extend(rule_errors(body, schema))
    return [error.problem() for error in errors]


def operator_problems(
    spec: Mapping[str, Any], results_claim: str, labels: Mapping[str, str] | None = None
) -> list[Problem]:
    """What the operator refuses a stored spec with (its `controller/reconciling.parse`, the
    results claim check and, given the run's labels, the series check): the run ends
    Failed with these."""
    try:
        parsed = parse_spec(spec)
    except SpecError as exc:
        return list(exc.problems)
    return [
        *check(parsed),
        *results_claim_problems(parsed, results_claim),
        *series_problems(parsed, labels),
    ]


def check_manifest(
    doc: Mapping[str, Any], results_claim: str = DEFAULT_RESULTS_CLAIM
) -> list[Problem]:
    """Every problem admission would find in one BenchmarkRun manifest; [] = it runs.

    `results_claim`: the chart's results.claimName of the operator it is for.
    """
    if not isinstance(doc, Mapping):
        return [Problem("<document>", "is not an object (a BenchmarkRun manifest)")]
    if doc.get("kind") == SCHEDULE_KIND and doc.get("apiVersion") == API_VERSION:
        return _schedule_problems(doc, results_claim)
    if doc.get("kind") != KIND or doc.get("apiVersion") != API_VERSION:
        shown = f"{doc.get('apiVersion')}/{doc.get('kind')}"
        return [Problem("apiVersion", f"{shown} is not {API_VERSION}/{KIND}")]
    problems = api_server_problems(doc)
    if problems:
        return problems
    stored = defaulted(_json_like(dict(doc)), crd_schema())
    labels = (stored.get("metadata") or {}).get("labels") or {}
    return operator_problems(stored["spec"], results_claim, labels)


def _schedule_problems(doc: Mapping[str, Any], results_claim: str) -> list[Problem]:
    """A BenchmarkSchedule: its CRD at the API server, then the operator's tick."""
    problems = api_server_problems(doc, schedule_crd_schema())
    if problems:
        return problems
    stored = defaulted(_json_like(dict(doc)), schedule_crd_schema())
    try:
        spec = parse_schedule_spec(stored["spec"])
    except SpecError as exc:
        return list(exc.problems)
    return schedule_problems(spec, results_claim)
