"""Durations: the one syntax the CRD admits and every program parses.

A subset of Go's durations (``90s``, ``5m``, ``1h30m``, ``250ms``): the CRD's
pattern and CEL's ``duration()`` accept exactly these, so whatever the API
server admits the runner runs. Numbers are seconds (step files written by
hand or by tests may give them).
"""

from __future__ import annotations

import re
from decimal import Decimal

DURATION_PATTERN = r"^([0-9]{1,9}(ms|s|m|h))+$"
DURATION_EXAMPLES = "90s, 5m or 1h30m"
_PART = re.compile(r"([0-9]+)(ms|s|m|h)")
_SECONDS = {"ms": Decimal("0.001"), "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600)}


def parse_duration(value: str | float) -> float:
    """Seconds in ``value``: a duration such as ``5m`` or ``1h30m``, or a number of
    seconds. ValueError, with an example of the syntax, otherwise."""
    if isinstance(value, int | float):
        return float(value)
    if not re.fullmatch(DURATION_PATTERN, value):
        raise ValueError(f"{value!r} is not a duration like {DURATION_EXAMPLES}")
    return float(sum(int(n) * _SECONDS[unit] for n, unit in _PART.findall(value)))


def format_duration(seconds: float) -> str:
    """The shortest ``1h2m3s`` form of a number of seconds (rounded up)."""
    total = int(-(-seconds // 1))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v]
    return "".join(parts) or "0s"
