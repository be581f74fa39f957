"""Units on the wire: durations (``90s``, ``1h30m``), Kubernetes quantities
(``8Gi``, ``500m``), MySQL sizes (``4G``) and PostgreSQL memory settings
(``128MB``, or a number of the setting's unit). Pure parsing, no I/O."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# The CRD pattern and CEL's duration() accept the same subset of Go durations
# the models' Duration type parses: one syntax, one parser (dbbench_contract.durations).
from dbbench_contract.durations import DURATION_PATTERN, Duration, format_duration

__all__ = [
    "DURATION_PATTERN", "Duration", "format_bytes", "format_duration", "parse_mysql_size",
    "parse_quantity",
]  # fmt: skip

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_MYSQL_SIZE = re.compile(r"^([0-9]+)([KMGT]?)$", re.IGNORECASE)
# PostgreSQL's memory units are case-sensitive; a bare number is in the
# setting's own unit (8 kB pages for shared_buffers, kB for work_mem).
_POSTGRES_SIZE = re.compile(r"^([0-9]+)\s*(B|kB|MB|GB|TB)?$")
_POSTGRES_UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def parse_quantity(value: str | int) -> Decimal:
    """A Kubernetes resource quantity in base units (bytes, cores)."""
    if isinstance(value, int):
        return Decimal(value)
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity like 512Mi, 8Gi or 500m")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:
        raise ValueError(f"{value!r} is not a Kubernetes quantity") from exc
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number * (Decimal(10) ** _DECIMAL[suffix])
    return number * (Decimal(10) ** int(suffix[1:]))


def parse_mysql_size(value: str) -> int:
    """Bytes in a MySQL/MariaDB size option such as ``4G``, ``512M`` or ``1073741824``."""
    match = _MYSQL_SIZE.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a size like 1073741824, 512M or 4G")
    power = " KMGT".index(match.group(2).upper() or " ")
    return int(match.group(1)) << (10 * power)


def parse_postgres_size(value: str, unit_bytes: int) -> int:
    """Bytes in a PostgreSQL memory setting such as ``512MB`` or ``16384`` (x unit_bytes)."""
    match = _POSTGRES_SIZE.match(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a size like 512MB, 4GB or a number of {unit_bytes} B")
    unit = _POSTGRES_UNITS[match.group(2)] if match.group(2) else unit_bytes
    return int(match.group(1)) * unit


def format_bytes(value: Decimal | int | float) -> str:
    """Human-readable binary size, e.g. ``7.5Gi``."""
    size = float(value)
    for unit in ("", "Ki", "Mi", "Gi", "Ti"):
        if abs(size) < 1024:
            return f"{size:.3g}{unit}"
        size /= 1024
    return f"{size:.3g}Pi"
