"""When a schedule's runs are due (pure: the expression, the zone and the clock in).

Times are computed in the schedule's zone with croniter and returned in UTC.
Daylight saving as cron does it: a time the spring-forward change skips (02:30
when clocks go from 02:00 to 03:00) runs at the first minute after the change;
a time the fall-back change repeats runs once, the first time, unless the
expression's hour is a wildcard (`0 * * * *` runs in both of the repeated hours:
an hour passed each time).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

# A bound on the scheduled times looked at between two ticks (CronJob gives up past
# 100 missed starts too): a schedule resumed after months does not loop for long.
MAX_MISSED = 100
_WILDCARD_HOUR_MACROS = frozenset({"@hourly"})


def _zone(name: str | None) -> ZoneInfo:
    return ZoneInfo(name or "UTC")


def _wildcard_hour(expression: str) -> bool:
    fields = expression.split()
    if len(fields) == 1:
        return fields[0] in _WILDCARD_HOUR_MACROS
    return "*" in fields[1]


def _repeated(local: datetime) -> bool:
    """The second occurrence of a wall-clock time the fall-back change repeats."""
    first = local.replace(fold=0)
    return local.fold == 1 and first.utcoffset() != local.utcoffset()


def times_after(expression: str, zone: str | None, after: datetime) -> croniter[datetime]:
    """An iterator of the schedule's times strictly after `after` (aware datetimes)."""
    return croniter(expression, after.astimezone(_zone(zone)), ret_type=datetime)


def _next(it: croniter[datetime], expression: str) -> datetime:
    skip_repeats = not _wildcard_hour(expression)
    while True:
        local = it.get_next(datetime)
        if skip_repeats and _repeated(local):
            continue
        return local.astimezone(UTC)


def next_time(expression: str, zone: str | None, after: datetime) -> datetime:
    """The first scheduled time strictly after `after`, in UTC."""
    return _next(times_after(expression, zone, after), expression)


def due_time(
    expression: str,
    zone: str | None,
    since: datetime,
    now: datetime,
    deadline_seconds: int | None,
) -> datetime | None:
    """The scheduled time to start a run for now, or None: the latest time in
    (`since`, `now`] (at most one missed time is caught up, as CronJob), and only
    if it is within `deadline_seconds` of now. `since` is the last scheduled time
    started, or the schedule's creation."""
    earliest = since
    if deadline_seconds is not None:
        earliest = max(earliest, now - timedelta(seconds=deadline_seconds))
    it = times_after(expression, zone, earliest)
    found: datetime | None = None
    for _ in range(MAX_MISSED):
        candidate = _next(it, expression)
        if candidate > now:
            return found
        found = candidate
    # More than MAX_MISSED times passed: the latest of them, found from just before now.
    return latest_before(expression, zone, now)


def latest_before(expression: str, zone: str | None, now: datetime) -> datetime | None:
    """The last scheduled time at or before `now` (within a year), in UTC."""
    it = croniter(expression, now.astimezone(_zone(zone)) + timedelta(seconds=1),
                  ret_type=datetime)  # fmt: skip
    skip_repeats = not _wildcard_hour(expression)
    for _ in range(MAX_MISSED):
        local = it.get_prev(datetime)
        if local < now - timedelta(days=366):
            return None
        if skip_repeats and _repeated(local):
            continue
        return local.astimezone(UTC)
    return None
