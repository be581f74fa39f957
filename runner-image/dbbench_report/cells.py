"""HTML fragments for tables (pure). Every number cell carries its exact value in
``data-value`` next to the rounded text, so readers (and tests) can check both."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

NA = "—"


def fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return NA
    return f"{value:,.{digits}f}"


def num(key: str, value: float | int | None, digits: int = 1) -> str:
    if value is None:
        return f'<td class="na" data-key="{escape(key)}">{NA}</td>'
    text = f"{value:,}" if isinstance(value, int) else fmt(float(value), digits)
    return f'<td class="num" data-key="{escape(key)}" data-value="{value!r}">{escape(text)}</td>'


def text(value: Any, key: str = "") -> str:
    shown = NA if value is None or value == "" else str(value)
    attr = f' data-key="{escape(key)}"' if key else ""
    return f"<td{attr}>{escape(shown)}</td>"


def raw(html: str, key: str = "") -> str:
    attr = f' data-key="{escape(key)}"' if key else ""
    return f"<td{attr}>{html}</td>"


def row(cells: Iterable[str], attrs: Mapping[str, Any] | None = None) -> str:
    attributes = "".join(f' data-{escape(k)}="{escape(str(v))}"' for k, v in (attrs or {}).items())
    return f"<tr{attributes}>{''.join(cells)}</tr>"


def table(name: str, headers: Iterable[str], rows: Iterable[str]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return (
        f'<table data-table="{escape(name)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def mapping(values: Mapping[str, Any] | None) -> str:
    """A settings or labels dict as 'key = value' lines."""
    if not values:
        return escape(NA)
    return "<br>".join(f"{escape(str(k))} = {escape(str(v))}" for k, v in sorted(values.items()))


def mib(value: float | int | None) -> float | None:
    return None if value is None else float(value) / 2**20
