"""Durations: the one syntax the CRD admits, parsed once, when a document is read.

A subset of Go's durations (``90s``, ``5m``, ``1h30m``, ``250ms``): the CRD's
pattern and CEL's ``duration()`` accept exactly these, so whatever the API
server admits the runner runs. ``Duration`` is the models' type for them: a
spec or a step file read into its model holds seconds (``.seconds``) and the
text as written (``.text``, what it serialises back to), so that no program
parses a duration after admission and a summary shows ``90s`` as the user
wrote it, not ``1m30s``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

DURATION_PATTERN = r"^([0-9]{1,9}(ms|s|m|h))+$"
DURATION_EXAMPLES = "90s, 5m or 1h30m"
# The longest duration a spec may give (the CRD's maxLength).
DURATION_MAX_LENGTH = 32
_PART = re.compile(r"([0-9]+)(ms|s|m|h)")
_SECONDS = {"ms": Decimal("0.001"), "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600)}


def parse_duration(value: str) -> float:
    """Seconds in ``value``, a duration such as ``5m`` or ``1h30m``; ValueError,
    with an example of the syntax, otherwise. Only ``Duration`` calls it."""
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


class Duration:
    """A duration of a spec or step file: its seconds, and its text as written.

    Immutable. Not a dataclass: pydantic would write a default of this type
    into the CRD's schema field by field instead of as its text.
    """

    __slots__ = ("seconds", "text")
    seconds: float
    text: str

    def __init__(self, seconds: float, text: str) -> None:
        object.__setattr__(self, "seconds", seconds)
        object.__setattr__(self, "text", text)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Duration is immutable: cannot set {name}")

    def __reduce__(self) -> tuple[type[Duration], tuple[float, str]]:
        return (Duration, (self.seconds, self.text))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Duration):
            return NotImplemented
        return (self.seconds, self.text) == (other.seconds, other.text)

    def __hash__(self) -> int:
        return hash((self.seconds, self.text))

    def __repr__(self) -> str:
        return f"Duration({self.text!r})"

    @classmethod
    def parse(cls, text: str) -> Duration:
        return cls(parse_duration(text), text)

    @classmethod
    def of_seconds(cls, seconds: float) -> Duration:
        """A duration made in code (whole milliseconds), written as ``<n>ms``."""
        millis = round(seconds * 1000)
        return cls(millis / 1000, f"{millis}ms")

    def __str__(self) -> str:
        return self.text

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # The string checks are pydantic's own (type, length, pattern: the same
        # errors, worded as for any string field, and the CRD's schema); the
        # text is then parsed, once.
        text = core_schema.str_schema(pattern=DURATION_PATTERN, max_length=DURATION_MAX_LENGTH)

        def validate(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Duration:
            if isinstance(value, Duration):
                return value
            return cls.parse(inner(value))

        return core_schema.no_info_wrap_validator_function(
            validate,
            text,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda duration: duration.text, return_schema=core_schema.str_schema()
            ),
        )
