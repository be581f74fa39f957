"""Admission checks of ``spec.expectations`` that CEL cannot do well (the
operation types a phase performs) or cannot do at all (the run's labels: a
CRD's rules see only the spec). Pure; the operator fails a run with these
problems, naming the field, and ``dbbench check`` reports them offline."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from dbbench_contract.history import SERIES_LABEL

from .base import Problem
from .phases import Phase
from .spec import BenchmarkRunSpec


def operations_of(phase: Phase) -> tuple[str, ...]:
    """The operation types a phase's steps measure (its summary's operationsByType keys)."""
    if phase.type == "insert":
        return ("insert",)
    if phase.type == "pointReads":
        return ("read",)
    if phase.type == "query":
        return tuple(phase.effective_queries)
    return () if phase.mix is None else phase.mix.groups


def operation_problems(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """An expectation on an operation type its phase does not perform."""
    phases = {p.name: p for p in spec.phases}
    for index, expectation in enumerate(spec.expectations or ()):
        phase = phases.get(expectation.phase)
        if phase is None or expectation.operation is None:
            continue  # the CEL rule names the phase
        performed = operations_of(phase)
        if expectation.operation not in performed:
            yield Problem(
                f"spec.expectations[{index}].operation",
                f"phase {phase.name} ({phase.type}) performs no {expectation.operation} "
                f"operations; use one of {', '.join(performed) or '(none)'}, or leave "
                "operation unset for the phase's figures over all its operations",
            )


def series_problems(spec: BenchmarkRunSpec, labels: Mapping[str, str] | None) -> Iterator[Problem]:
    """A tolerance compares with the series' recent runs: the run must name its series."""
    if (labels or {}).get(SERIES_LABEL):
        return
    for index, expectation in enumerate(spec.expectations or ()):
        if expectation.tolerance is not None:
            yield Problem(
                f"spec.expectations[{index}].tolerance",
                f"compares with the series' recent runs, and this run has no {SERIES_LABEL} "
                f"label: add metadata.labels[{SERIES_LABEL}] (the series' name) or remove "
                "the tolerance",
            )
