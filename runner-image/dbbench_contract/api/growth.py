"""``spec.phases[].growth``: load a table in steps and measure reading phases
after each step (field benchmark 2: query rates as the data grew to 200M).

The model and its rules; the order it gives the run's steps is
``phase_order.phase_runs`` (pure, shared by the operator's plan, the admission
checks and the report).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from .base import ApiModel, Rule, refuse_duplicates

# A phase's name, as `phases[].name` admits it.
PhaseName = Annotated[
    str, Field(min_length=1, max_length=30, pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
]
MAX_GROWTH_STEPS = 100
# keyspace.REPEAT_LIMIT: a step's (phase, repeat) position seeds its operation
# streams and stamps its writes, and a measured phase's repeats are numbered on
# across the growth steps (steps x repeats of them).
MAX_REPEATS_OF_A_PHASE = 1024


class Growth(ApiModel):
    """Load this insert phase's records in `steps` equal parts and run the phases
    named in `measure` after each part, so that they are measured as the table
    grows ("load to N in K steps and measure these phases after each step")."""

    steps: int = Field(
        ge=2,
        le=MAX_GROWTH_STEPS,
        description=(
            "Parts the phase's records (its `operations`, default dataset.records) are "
            "loaded in, each its own step: part i takes the table from about (i-1)/steps to "
            "i/steps of them (e.g. 10: a step per 10%). Each part is reported as a repeat of "
            "the insert phase (repeat i)."
        ),
    )
    measure: list[PhaseName] = Field(
        min_length=1,
        max_length=31,
        description=(
            "Names of the phases run after every part, in their listed order, instead of "
            "once at their own place: each must be a mix, query or pointReads phase listed "
            "after this one. Their reads draw keys from every record loaded so far (not "
            "only dataset.records). Each runs `repeats` times after each part; its repeats "
            "are numbered on across the parts ((i-1) x repeats + r), and the report plots "
            "ops/s and p99 against the records stored."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    @field_validator("measure")
    @classmethod
    def _measure_unique(cls, value: list[str]) -> list[str]:
        # The API server enforces this through x-kubernetes-list-type: set.
        refuse_duplicates(list(value), lambda name: f'"{name}"')
        return value


def _grown(spec: Any) -> list[Any]:
    return [p for p in spec.phases if p.growth is not None]


# Phase-level rules (Phase.RULES takes them; self is the phase).
PHASE_RULES = (
    Rule(
        cel="!has(self.growth) || self.type == 'insert'",
        message=(
            "growth is only valid on an insert phase (it loads the phase's records in "
            "steps); put it on the phase that loads the table"
        ),
        field="growth",
        reason="FieldValueForbidden",
        holds=lambda p: p.growth is None or p.type == "insert",
    ),
    Rule(
        cel="!has(self.growth) || !(self.name in self.growth.measure)",
        message=(
            "growth.measure names the phase itself: its own steps are measured anyway; "
            "name the reading phases to run after each step"
        ),
        field="growth",
        holds=lambda p: p.growth is None or p.name not in p.growth.measure,
    ),
)

# Run-level rules (BenchmarkRunSpec.RULES takes them; self is the spec).
SPEC_RULES = (
    Rule(
        cel="self.phases.filter(p, has(p.growth)).size() <= 1",
        message=(
            "phases[].growth: at most one phase of a run may grow its table; give the "
            "others plain inserts (operations) or split the run"
        ),
        field="phases",
        holds=lambda s: len(_grown(s)) <= 1,
    ),
    Rule(
        cel=(
            "self.phases.all(p, !has(p.growth) || p.growth.measure.all(m, "
            "self.phases.exists(q, q.name == m && q.type != 'insert')))"
        ),
        message=(
            "phases[].growth.measure: every name must be a mix, query or pointReads phase "
            "of this run (an insert phase would load again after every step)"
        ),
        field="phases",
        holds=lambda s: all(
            any(q.name == m and q.type != "insert" for q in s.phases)
            for p in _grown(s)
            for m in p.growth.measure
        ),
    ),
    Rule(
        cel=f"self.phases.all(p, !has(p.growth) || p.growth.steps * self.repeats "
        f"<= {MAX_REPEATS_OF_A_PHASE})",
        message=(
            f"phases[].growth.steps x repeats must be at most {MAX_REPEATS_OF_A_PHASE} (a "
            "measured phase runs repeats times after every step); lower either"
        ),
        field="phases",
        holds=lambda s: all(
            p.growth.steps * s.repeats <= MAX_REPEATS_OF_A_PHASE for p in _grown(s)
        ),
    ),
)
