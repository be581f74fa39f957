"""``BenchmarkSchedule``: a BenchmarkRun made from a template on a cron schedule,
with CronJob's semantics where they apply (schedule, timeZone, concurrencyPolicy,
startingDeadlineSeconds, suspend, history limits).

The template's ``spec`` is a ``BenchmarkRunSpec``: its schema and CEL rules come
with it into the CRD, so the API server refuses a template as it refuses a run;
``template_problems`` is the operator's side (the run's semantic checks and the
results claim), reported with the template's field paths, and `cron_problem` /
`zone_problem` what croniter and the time zone database cannot read
(`operator_problems`: all three, as the operator and `dbbench check` run them).
croniter is needed by the operator and the CLI, which import this module; the
runner and the results service do not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from pydantic import Field, ValidationError

from .base import ApiModel, Problem, Rule, SpecError, StatusModel
from .semantics import check, results_claim_problems
from .spec import BenchmarkRunSpec, broken_rules, parse_spec, schema_problem
from .status import Condition

# A schedule's runs carry both (issue 31's conventions): the series is the schedule.
SERIES_LABEL = "dbbench.io/series"
SCHEDULE_LABEL = "dbbench.io/schedule"
# Run names are `<schedule>-<unix minutes>` (8 digits until the year 2160): a schedule
# name of at most 52 characters keeps them, and the series label, within 63 (CronJob's
# own limit, for the same reason).
MAX_SCHEDULE_NAME = 52

# What CronJob's parser takes: five fields (minute hour day-of-month month day-of-week)
# of numbers, *, ?, three-letter names, ranges, lists and steps; or a macro. The
# operator then parses it (croniter) and refuses what that cannot.
_ATOM = "([0-9]+|[*?]|[A-Za-z]{3})"
_FIELD = f"{_ATOM}([-,/]{_ATOM})*"
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
CRON_PATTERN = (
    f"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|{_FIELD}( +{_FIELD}){{4}})$"
)
# An IANA zone name's shape (Europe/Berlin, America/Argentina/Buenos_Aires, UTC,
# Etc/GMT+2); whether the zone exists is checked against the time zone database.
ZONE_PATTERN = "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$"
_RESERVED_LABELS = (SERIES_LABEL, SCHEDULE_LABEL)


class TemplateMetadata(ApiModel):
    """What the schedule's runs carry besides what the operator sets."""

    labels: dict[str, str] = Field(
        default_factory=dict,
        max_length=32,
        description=(
            "Labels every run of the schedule gets, besides dbbench.io/series and "
            "dbbench.io/schedule (set by the operator to the schedule's name; not allowed here)."
        ),
    )

    RULES = (
        Rule(
            cel="!('dbbench.io/series' in self.labels) && !('dbbench.io/schedule' in self.labels)",
            message=(
                "labels: dbbench.io/series and dbbench.io/schedule are set by the operator to "
                "the schedule's name; remove them (to join another series, label runs yourself)"
            ),
            field="labels",
            holds=lambda m: not any(key in m.labels for key in _RESERVED_LABELS),
        ),
    )


class RunTemplate(ApiModel):
    """The BenchmarkRun each scheduled time makes."""

    metadata: TemplateMetadata | None = Field(
        default=None,
        description="Labels of the runs made from the template.",
    )

    @property
    def labels(self) -> dict[str, str]:
        """The template's own labels (none when it sets no metadata)."""
        return dict(self.metadata.labels) if self.metadata is not None else {}

    spec: BenchmarkRunSpec = Field(
        description=(
            "The runs' spec: a BenchmarkRun spec, admitted as a run's is (the same schema and "
            "rules at the API server, the operator's checks when the schedule is created or "
            "changed; a refused template makes no runs)."
        ),
    )


class BenchmarkScheduleSpec(ApiModel):
    """Runs made from `template` at the times `schedule` names."""

    schedule: str = Field(
        min_length=1,
        max_length=128,
        description=(
            "When to start a run: a cron expression of five fields (minute hour day-of-month "
            "month day-of-week, e.g. '0 2 * * *' for 02:00 every day, '*/30 * * * *' every half "
            "hour) or @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually; read "
            "in timeZone. As CronJob's."
        ),
    )
    time_zone: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description=(
            "IANA time zone the schedule is read in (e.g. Europe/Berlin): '0 2 * * *' is 02:00 "
            "local time through daylight saving changes. Unset: UTC (CronJob's default is the "
            "controller manager's zone; the operator's is UTC)."
        ),
    )
    template: RunTemplate = Field(description="The BenchmarkRun each scheduled time makes.")
    concurrency_policy: Literal["Forbid", "Allow", "Replace"] = Field(
        default="Forbid",
        description=(
            "When a scheduled time comes while a run of this schedule is still active (not "
            "Succeeded or Failed): Forbid (default) skips the time, Allow starts another run "
            "beside it, Replace deletes the active run and starts the new one. As CronJob's."
        ),
    )
    starting_deadline_seconds: int | None = Field(
        default=None,
        ge=0,
        le=31_536_000,
        description=(
            "A scheduled time missed (the operator down, the schedule suspended) is started "
            "late only within this many seconds of it; at most one missed time is caught up, "
            "the latest. Unset: no limit. As CronJob's."
        ),
    )
    suspend: bool = Field(
        default=False,
        description=(
            "true: no new runs (runs already started go on). Times that pass while suspended "
            "are missed: unsuspending starts the latest of them only within "
            "startingDeadlineSeconds. Default false."
        ),
    )
    successful_runs_history_limit: int = Field(
        default=3,
        ge=0,
        le=1000,
        description=(
            "How many Succeeded runs of the schedule to keep; older ones are deleted (their "
            "results stay on the results claim). Default 3."
        ),
    )
    failed_runs_history_limit: int = Field(
        default=1,
        ge=0,
        le=1000,
        description=(
            "How many Failed runs of the schedule to keep; older ones are deleted. Default 1."
        ),
    )

    RULES = (
        Rule(
            cel=f"self.schedule.matches({CRON_PATTERN!r})",
            message=(
                "schedule: not a cron expression: use five fields separated by spaces (minute "
                "hour day-of-month month day-of-week, e.g. '0 2 * * *') or a macro such as "
                "@daily; seconds, years and TZ= prefixes are not supported (use timeZone)"
            ),
            field="schedule",
            holds=lambda s: re.fullmatch(CRON_PATTERN, s.schedule) is not None,
        ),
        Rule(
            cel=f"!has(self.timeZone) || self.timeZone.matches({ZONE_PATTERN!r})",
            message=(
                "timeZone: not an IANA time zone name; use one such as Europe/Berlin, "
                "America/New_York or UTC"
            ),
            field="timeZone",
            holds=lambda s: (
                s.time_zone is None or re.fullmatch(ZONE_PATTERN, s.time_zone) is not None
            ),
        ),
    )


class Verdict(StatusModel):
    """The change-point judgement of the series' latest finished run."""

    run: str = Field(max_length=253, description="The run judged.")
    reason: str = Field(
        max_length=128,
        description=(
            "Its ChangePoint condition's reason: Regression, Improvement, NoChange, NotJudged."
        ),
    )
    message: str | None = Field(
        default=None, max_length=4096, description="Its ChangePoint condition's message."
    )


class BenchmarkScheduleStatus(StatusModel):
    """What the operator last did for the schedule and what it will do next."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="metadata.generation the status was computed from."
    )
    last_schedule_time: datetime | None = Field(
        default=None, description="The scheduled time of the last run started."
    )
    next_schedule_time: datetime | None = Field(
        default=None,
        description="The next scheduled time (unset while suspended or refused).",
    )
    active: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="Names of the schedule's runs not yet Succeeded or Failed.",
    )
    last_run: str | None = Field(
        default=None, max_length=253, description="Name of the last run started."
    )
    latest_verdict: Verdict | None = Field(
        default=None,
        description=(
            "The ChangePoint condition (reason and message) of the series' latest finished "
            "run that has one."
        ),
    )
    conditions: list[Condition] = Field(
        default_factory=list,
        description=(
            "Accepted: True when the schedule, timeZone and template are admitted; False with "
            "reason ScheduleInvalid, TimeZoneInvalid or TemplateInvalid and a message naming "
            "the field (no runs are made)."
        ),
    )


def _prefixed(problem: Problem) -> Problem:
    """A run-spec problem (`spec.x`) at the template's path (`spec.template.spec.x`)."""
    return Problem(f"spec.template.{problem.field}", problem.message)


def parse_schedule_spec(raw: Mapping[str, Any]) -> BenchmarkScheduleSpec:
    """A stored schedule's ``spec`` typed, with every rule the CRD enforces (the
    template's run rules included); raises ``SpecError`` naming each field."""
    if not isinstance(raw, Mapping):
        raise SpecError([Problem(field="spec", message="must be an object")])
    try:
        spec = BenchmarkScheduleSpec.model_validate(dict(raw))
    except ValidationError as exc:
        raise SpecError([schema_problem(e) for e in exc.errors()]) from exc
    checked: list[tuple[ApiModel, str]] = [(spec, "spec")]
    if spec.template.metadata is not None:
        checked.append((spec.template.metadata, "spec.template.metadata"))
    problems = [
        Problem(f"{path}.{rule.field}", rule.message_for(model))
        for model, path in checked
        for rule in type(model).RULES
        if not rule.holds(model)
    ]
    problems += [
        _prefixed(Problem(f"{path}.{rule.field}" if rule.field else path, rule.message_for(m)))
        for rule, m, path in broken_rules(spec.template.spec)
    ]
    if problems:
        raise SpecError(problems)
    return spec


def template_problems(spec: BenchmarkScheduleSpec, results_claim: str) -> list[Problem]:
    """What the operator would refuse a run made from the template with (its semantic
    checks and the results claim), at the template's field paths."""
    raw = spec.template.spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    try:
        run_spec = parse_spec(raw)
    except SpecError as exc:  # a rule only the run's own parse knows
        return [_prefixed(p) for p in exc.problems]
    found = [*check(run_spec), *results_claim_problems(run_spec, results_claim)]
    return [_prefixed(p) for p in found]


def cron_problem(expression: str) -> Problem | None:
    """What croniter (the operator's cron parser) cannot read: a minute of 61, an
    unknown month name... The CEL rule only checks the expression's shape."""
    try:
        croniter(expression)
    except (CroniterError, ValueError, KeyError) as exc:
        return Problem(
            "spec.schedule",
            f"{expression!r} is not a valid cron expression ({exc}); fields are minute 0-59, "
            "hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 0-6 or SUN-SAT",
        )
    return None


def operator_problems(spec: BenchmarkScheduleSpec, results_claim: str) -> list[Problem]:
    """What the operator refuses a schedule the API server stored with: its cron
    expression and zone as croniter and the time zone database read them, and its
    template as a run's spec is checked."""
    found = [p for p in (cron_problem(spec.schedule), zone_problem(spec)) if p is not None]
    return [*found, *template_problems(spec, results_claim)]


def zone_problem(spec: BenchmarkScheduleSpec) -> Problem | None:
    """A timeZone the time zone database does not have."""
    if spec.time_zone is None:
        return None
    try:
        ZoneInfo(spec.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        return Problem(
            "spec.timeZone",
            f"unknown time zone {spec.time_zone!r}: use an IANA name such as Europe/Berlin or UTC",
        )
    return None
