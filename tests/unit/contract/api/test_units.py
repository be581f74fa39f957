"""Units on the wire: durations, Kubernetes quantities, MySQL sizes."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dbbench_contract.api.units import (
    Duration,
    format_bytes,
    format_duration,
    parse_mysql_size,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("5m", 300), ("1h30m", 5400), ("250ms", 0.25), ("2h", 7200), ("0s", 0)],
)
def test_parse_duration(text: str, seconds: float) -> None:
    duration = Duration.parse(text)
    assert (duration.seconds, duration.text, str(duration)) == (seconds, text, text)


@pytest.mark.parametrize("text", ["5", "5 minutes", "1d", "-1s", "1.5h", ""])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        Duration.parse(text)


def test_format_duration_round_trips() -> None:
    assert format_duration(5400) == "1h30m"
    assert format_duration(59.2) == "1m"
    assert format_duration(0) == "0s"
    assert Duration.parse(format_duration(3725)).seconds == 3725


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8Gi", 8 * 1024**3),
        ("512Mi", 512 * 1024**2),
        ("1G", 10**9),
        ("500m", Decimal("0.5")),
        ("2", 2),
        (3, 3),
        ("1e3", 1000),
        ("1.5Gi", Decimal("1.5") * 1024**3),
    ],
)
def test_parse_quantity(value: str | int, expected: Decimal | int) -> None:
    assert parse_quantity(value) == expected


def test_parse_quantity_rejects_gigabytes_spelled_wrong() -> None:
    with pytest.raises(ValueError, match="8Gi"):
        parse_quantity("8GB")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1073741824", 1024**3), ("512M", 512 * 1024**2), ("4G", 4 * 1024**3), ("64k", 65536)],
)
def test_parse_mysql_size(value: str, expected: int) -> None:
    assert parse_mysql_size(value) == expected


def test_parse_mysql_size_rejects() -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_mysql_size("4 GB")


def test_format_bytes() -> None:
    assert format_bytes(8 * 1024**3) == "8Gi"
    assert format_bytes(1536) == "1.5Ki"
