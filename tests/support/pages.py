"""Reading a report back: sections, charts and number cells (stdlib HTML parser)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Cell:
    key: str
    value: str | None
    text: str
    row: dict[str, str]
    table: str


@dataclass
class Page(HTMLParser):
    sections: list[str] = field(default_factory=list)
    charts: dict[str, int] = field(default_factory=dict)
    cells: list[Cell] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    _table: str = ""
    _row: dict[str, str] = field(default_factory=dict)
    _cell: dict[str, str] | None = None
    _text: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section":
            self.sections.append(a["data-section"])
        elif tag == "figure":
            self.charts[a["data-chart"]] = int(a["data-series"])
        elif tag == "table":
            self._table = a.get("data-table", "")
        elif tag == "tr":
            self._row = {k[5:]: v for k, v in a.items() if k.startswith("data-")}
        elif tag in ("td", "b") and "data-key" in a:
            self._cell, self._text = a, []
        for name in ("src", "href"):
            if name in a and not a[name].startswith("#"):
                self.external.append(f"{tag} {name}={a[name]}")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "b") and self._cell is not None:
            self.cells.append(Cell(self._cell["data-key"], self._cell.get("data-value"),
                                   "".join(self._text), dict(self._row), self._table))  # fmt: skip
            self._cell = None

    def find(self, table: str, key: str, **row: object) -> Cell:
        wanted = {k: str(v) for k, v in row.items()}
        found = [c for c in self.cells if c.table == table and c.key == key
                 and all(c.row.get(k) == v for k, v in wanted.items())]  # fmt: skip
        assert len(found) == 1, f"{table}/{key}/{wanted}: {len(found)} cells"
        return found[0]


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page
