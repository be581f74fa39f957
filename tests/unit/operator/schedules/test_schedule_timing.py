"""When a schedule's runs are due: croniter in the schedule's zone, daylight saving
as cron does it, missed times as CronJob catches them up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dbbench_contract.api.schedule import cron_problem
from dbbench_operator.schedules.timing import due_time, next_time


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def times(expression: str, zone: str | None, after: datetime, count: int) -> list[datetime]:
    found = []
    for _ in range(count):
        after = next_time(expression, zone, after)
        found.append(after)
    return found


def test_a_local_time_keeps_its_wall_clock_across_daylight_saving() -> None:
    # 02:30 in Berlin is 00:30 UTC in summer (CEST, +2) and 01:30 UTC in winter (CET, +1).
    assert times("30 2 * * *", "Europe/Berlin", utc(2026, 10, 23, 12), 3) == [
        utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30),
    ]  # fmt: skip


def test_a_time_the_fall_back_repeats_runs_once() -> None:
    # 25 Oct 2026: 02:30 happens twice in Berlin (00:30 and 01:30 UTC); one run, the first.
    assert times("30 2 * * *", "Europe/Berlin", utc(2026, 10, 24, 12), 2) == [
        utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30),
    ]  # fmt: skip


def test_an_hourly_schedule_runs_in_both_repeated_hours() -> None:
    # Wildcard hour: every hour that passes, the repeated one included (00:00 and 01:00 UTC
    # are both 02:00 local).
    assert times("0 * * * *", "Europe/Berlin", utc(2026, 10, 24, 22, 30), 4) == [
        utc(2026, 10, 24, 23), utc(2026, 10, 25, 0), utc(2026, 10, 25, 1), utc(2026, 10, 25, 2),
    ]  # fmt: skip


def test_a_time_the_spring_forward_skips_runs_right_after_the_change() -> None:
    # 29 Mar 2026: Berlin goes from 02:00 to 03:00; 02:30 does not exist, the run is at 03:00
    # local (01:00 UTC), once.
    assert times("30 2 * * *", "Europe/Berlin", utc(2026, 3, 28, 12), 2) == [
        utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30),
    ]  # fmt: skip


def test_no_zone_is_utc() -> None:
    assert next_time("0 2 * * *", None, utc(2026, 7, 1, 3)) == utc(2026, 7, 2, 2)
    assert next_time("@hourly", "UTC", utc(2026, 7, 1, 3, 5)) == utc(2026, 7, 1, 4)


def test_the_latest_missed_time_is_due_and_only_that_one() -> None:
    # Created at 00:00, looked at 00:05:30: 00:01 ... 00:05 passed; one run, for 00:05.
    assert due_time("* * * * *", None, utc(2026, 1, 1), utc(2026, 1, 1, 0, 5, 30), None) == utc(
        2026, 1, 1, 0, 5
    )
    # Months later (thousands of missed times): still the latest only.
    assert due_time("* * * * *", None, utc(2026, 1, 1), utc(2026, 3, 1, 0, 5, 30), None) == utc(
        2026, 3, 1, 0, 5
    )


def test_nothing_is_due_between_times() -> None:
    last = utc(2026, 1, 1, 2)
    assert due_time("0 2 * * *", None, last, last + timedelta(hours=23), None) is None


def test_a_missed_time_past_the_starting_deadline_is_not_started() -> None:
    since, now = utc(2026, 1, 1), utc(2026, 1, 1, 0, 5, 30)
    assert due_time("* * * * *", None, since, now, 20) is None  # 00:05 is 30 s ago
    assert due_time("* * * * *", None, since, now, 40) == utc(2026, 1, 1, 0, 5)


@pytest.mark.parametrize("expression", ["61 * * * *", "* 24 * * *", "* * * FOO *", "* * 0 * *"])
def test_what_croniter_cannot_read_is_refused_naming_the_field(expression: str) -> None:
    problem = cron_problem(expression)
    assert problem is not None
    assert problem.field == "spec.schedule"
    assert expression in problem.message
    assert "minute 0-59" in problem.message


@pytest.mark.parametrize("expression", ["*/15 * * * *", "0 2 * * MON-FRI", "@daily", "0 0 1 JAN ?"])
def test_cronjob_expressions_are_read(expression: str) -> None:
    assert cron_problem(expression) is None
