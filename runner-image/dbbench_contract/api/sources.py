"""``spec.dataset.source``: the data set's records read from files on a
PersistentVolumeClaim instead of generated.

What the runner can honour, and admission therefore refuses otherwise:

- the shape is one whose key is the record number (indexed4, news, vehicle):
  the phases after the load draw record numbers 1..records and look up the
  shape's key of each, so the files' keys must be those numbers (each once;
  the runner checks every row and fails the step on the first that is not);
- every field of the shape comes from a column (CSV) or field (JSON Lines),
  or, for the list fields (news Tags, vehicle Items), is loaded empty;
- the first insert phase loads the files (all of them: no `operations`),
  with runner-made keys (idMode client): a server-made key would drop the
  files' own.

The runner's side: ``dbbench_runner.sources``.
"""

from __future__ import annotations

import posixpath
from typing import Annotated, Literal

from pydantic import Field

from .base import ApiModel, Rule

SourceFormat = Literal["csv", "jsonl"]
Compression = Literal["none", "gzip"]

# Where runner pods mount the claim (read-only); `files` are relative to it.
SOURCE_MOUNT = "/var/lib/dbbench/source"

# The shapes a source can fill: each one's key field and its other fields, in the
# runner's column order (tests/unit/contract/api checks them against the runner's
# generators). flat45 and ycsb are absent: their keys are hashes of the number.
SHAPE_KEYS = {"indexed4": "id", "news": "ID", "vehicle": "TestID"}
SHAPE_FIELDS: dict[str, tuple[str, ...]] = {
    "indexed4": ("Number", "Number1", "Date", "Data"),
    "news": ("Title", "CategoryID", "CreateTime", "UserID", "Tags", "Source", "SourceUrl",
             "Status"),
    "vehicle": ("VehicleID", "TestDate", "TestClass", "TestType", "TestResult", "Mileage",
                "PostcodeArea", "Make", "Model", "Colour", "FuelType", "CylinderCapacity",
                "FirstUseDate", "Items"),
}  # fmt: skip
# Fields that hold a list (a JSON array; in a CSV cell, its JSON text): the only
# ones a source may leave out (`empty`).
LIST_FIELDS: dict[str, tuple[str, ...]] = {"indexed4": (), "news": ("Tags",), "vehicle": ("Items",)}
SOURCE_SHAPES = tuple(SHAPE_FIELDS)

MAX_FILES = 256
MAX_NAME = 256
FilePath = Annotated[str, Field(min_length=1, max_length=1024)]
ColumnName = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]


def _cel_pick(values: dict[str, tuple[str, ...]]) -> str:
    """The shape's list as a CEL expression: (self.shape == 'a' ? [...] : ... : []).

    A chain of list literals rather than a map literal indexed by the shape: the
    API server's cost estimate then knows the list's size (for a map's value it
    assumes the largest possible list and refuses the rule)."""
    text = "[]"
    for shape, fields in reversed(values.items()):
        listed = "[" + ", ".join(f"'{f}'" for f in fields) + "]"
        text = f"self.shape == '{shape}' ? {listed} : {text}"
    return f"({text})"


_FIELDS_CEL = _cel_pick(SHAPE_FIELDS)
_LISTS_CEL = _cel_pick(LIST_FIELDS)


def file_path_ok(path: str) -> bool:
    """Relative to the claim's root, never leaving it."""
    return not path.startswith("/") and ".." not in posixpath.normpath(path).split("/")


class DataSource(ApiModel):
    """Files on a PersistentVolumeClaim that hold the data set's records, one per
    CSV row or JSON Lines line, loaded by the first insert phase instead of
    generated records."""

    claim_name: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description=(
            "PersistentVolumeClaim in the run's namespace holding the files. Runner pods "
            f"of insert phases mount it read-only at {SOURCE_MOUNT}: a ReadWriteOnce claim "
            "needs every runner pod on the node that mounts it (runner.pods 1, or a "
            "runner.nodeSelector); ReadOnlyMany or ReadWriteMany claims have no such limit."
        ),
    )
    files: list[FilePath] = Field(
        min_length=1,
        max_length=MAX_FILES,
        description=(
            "Files to load, relative to the claim's root, in this order; each may be a "
            "glob pattern (* ? [...]), which stands for its matches sorted by name. Rows "
            "are numbered across all files in this order: runner connection w of W "
            "(W = runner pods x threads) loads rows w, w+W, w+2W, ... (every connection "
            "reads the files, parses only its own rows). A missing file, or a pattern "
            "without matches, fails the step before anything is loaded."
        ),
    )
    format: SourceFormat = Field(
        description=(
            "csv: comma-separated values with a header row naming the columns (RFC 4180 "
            "quoting; see delimiter). jsonl: JSON Lines, one JSON object per line. Blank "
            "lines are skipped and not counted as records."
        ),
    )
    compression: Compression | None = Field(
        default=None,
        description=(
            "none or gzip. Unset: gzip for a file whose name ends in .gz, none otherwise. "
            "Files are read as a stream: the runner's memory does not grow with their size."
        ),
    )
    delimiter: str | None = Field(
        default=None,
        min_length=1,
        max_length=1,
        description="csv only: the character between values (default ',', e.g. '|' or '\\t').",
    )
    key: str = Field(
        min_length=1,
        max_length=MAX_NAME,
        description=(
            "The column (field) holding each record's key: the record numbers "
            "1..dataset.records, each exactly once, in any order (the key of indexed4's "
            "id, news's ID, vehicle's TestID). A row whose key is not an integer in that "
            "range, or repeats another row's (the database refuses the duplicate), fails "
            "the step naming the file and line."
        ),
    )
    fields: dict[str, ColumnName] = Field(
        max_length=32,
        description=(
            "The shape's fields (keys) and the columns or JSON fields that hold them "
            "(values), e.g. {VehicleID: vehicle_id, TestDate: test_date}. Every field of "
            "the shape but its key must be mapped, or listed in `empty`: "
            + "; ".join(f"{shape}: {', '.join(fields)}" for shape, fields in SHAPE_FIELDS.items())
            + ". Values are "
            "converted to the field's type: integers (decimal text or JSON numbers), "
            "text no longer than the shape's column, indexed4's Date as ISO 8601 "
            "(2021-01-31T12:00:00), lists as JSON arrays (a CSV cell holds the array's "
            "JSON text). vehicle: TestClass, TestType, TestResult, PostcodeArea, Make, "
            "Model, Colour, FuelType and each item's Type and Location must be names in "
            "the shape's lookup tables (MySQL, MariaDB and PostgreSQL store their ids), "
            "an item is {RfrID, Type, Location, Dangerous} (its Text and Section come "
            "from the RfrID). A value that does not convert fails the step with the file, "
            "line and field."
        ),
    )
    empty: list[ColumnName] = Field(
        default_factory=list,
        max_length=4,
        json_schema_extra={"default": []},
        description=(
            "List fields the files do not hold, loaded empty: news Tags, vehicle Items "
            "(the public vehicle-inspection data keeps items in a separate file)."
        ),
    )

    RULES = (
        Rule(
            cel="self.format == 'csv' || !has(self.delimiter)",
            message="delimiter applies to format csv only; remove it or use format: csv",
            field="delimiter",
            reason="FieldValueForbidden",
            holds=lambda s: s.format == "csv" or s.delimiter is None,
        ),
        Rule(
            cel=("self.files.all(f, !f.startsWith('/') && !f.matches('(^|/)[.][.](/|$)'))"),
            message=(
                "files: each path is relative to the claim's root and stays in it (no "
                "leading '/', no '..'); e.g. mot/test_result_2021.csv.gz"
            ),
            field="files",
            holds=lambda s: all(file_path_ok(f) for f in s.files),
        ),
    )

    def compression_of(self, name: str) -> Compression:
        if self.compression is not None:
            return self.compression
        return "gzip" if name.endswith(".gz") else "none"


def _missing(shape: str, source: DataSource) -> list[str]:
    return [
        f for f in SHAPE_FIELDS.get(shape, ()) if f not in source.fields and f not in source.empty
    ]


# Rules of `spec.dataset` (self: the Dataset, whose shape they need).
DATASET_RULES = (
    Rule(
        cel=f"!has(self.source) || self.shape in {list(SOURCE_SHAPES)!r}",
        message=(
            "source: files load into the shapes keyed by the record number (indexed4, news, "
            "vehicle); flat45 and ycsb keys are hashes of it, which files cannot hold; use "
            "one of those shapes or remove source"
        ),
        field="source",
        holds=lambda d: d.source is None or d.shape in SOURCE_SHAPES,
    ),
    Rule(
        cel=(
            f"!has(self.source) || "
            f"{_FIELDS_CEL}.all(f, f in self.source.fields || f in self.source.empty)"
        ),
        message="source.fields: every field of the shape but its key needs a column",
        message_expression=(
            f"'source.fields: the field ' + {_FIELDS_CEL}"
            ".filter(f, !(f in self.source.fields) && !(f in self.source.empty))[0] + "
            "' has no column; map it to the column that holds it (fields: {<field>: "
            "<column>}) or, for a list field, list it in source.empty'"
        ),
        describe=lambda d: (
            f"source.fields: the field {_missing(d.shape, d.source)[0]} has no "
            "column; map it to the column that holds it (fields: {<field>: <column>}) or, "
            "for a list field, list it in source.empty"
        ),
        field="source",
        reason="FieldValueRequired",
        holds=lambda d: d.source is None or not _missing(d.shape, d.source),
    ),
    Rule(
        cel=(
            f"!has(self.source) || "
            f"!(self.shape in {list(SOURCE_SHAPES)!r}) || "
            f"self.source.fields.all(f, f in {_FIELDS_CEL})"
        ),
        message=(
            "source.fields: a key there is not a field of the shape (the key comes from "
            "source.key); kubectl explain benchmarkrun.spec.dataset.source.fields lists "
            "the fields of each shape"
        ),
        field="source",
        holds=lambda d: (
            d.source is None
            or d.shape not in SHAPE_FIELDS
            or all(f in SHAPE_FIELDS[d.shape] for f in d.source.fields)
        ),
    ),
    Rule(
        cel=(
            f"!has(self.source) || "
            f"!(self.shape in {list(SOURCE_SHAPES)!r}) || "
            f"self.source.empty.all(f, f in {_LISTS_CEL} && "
            "!(f in self.source.fields))"
        ),
        message=(
            "source.empty: only list fields the files do not map can be loaded empty "
            "(news Tags, vehicle Items); map the others in source.fields"
        ),
        field="source",
        holds=lambda d: (
            d.source is None
            or d.shape not in LIST_FIELDS
            or all(f in LIST_FIELDS[d.shape] and f not in d.source.fields for f in d.source.empty)
        ),
    ),
)


# Rules of `spec` (self: the BenchmarkRunSpec): the phases that load a source.
SPEC_RULES = (
    Rule(
        cel=(
            "!has(self.dataset.source) || "
            "self.phases.all(p, p.type != 'insert' || p.idMode == 'client')"
        ),
        message=(
            "phases[].idMode: with dataset.source, insert phases load the files' records "
            "with their own keys (source.key); server-made keys would drop them. Use idMode "
            "client or remove dataset.source"
        ),
        field="phases",
        holds=lambda s: (
            s.dataset.source is None
            or all(p.type != "insert" or p.id_mode == "client" for p in s.phases)
        ),
    ),
    Rule(
        cel=(
            "!has(self.dataset.source) || !self.phases.exists(p, p.type == 'insert') || "
            "!has(self.phases.filter(p, p.type == 'insert')[0].operations)"
        ),
        message=(
            "phases[].operations: the first insert phase loads every row of "
            "dataset.source's files (dataset.records of them); remove its operations "
            "(later insert phases may set it: they insert generated records past the files')"
        ),
        field="phases",
        holds=lambda s: (
            s.dataset.source is None
            or all(p.operations is None for p in s.phases if p.type == "insert")
            or next(p for p in s.phases if p.type == "insert").operations is None
        ),
    ),
    # A growth loads its table in parts; the files are loaded whole by the first
    # insert (the keyspace is theirs: 1..records), so a part cannot be "the next
    # rows of the files" and a second part would generate records instead.
    Rule(
        cel="!has(self.dataset.source) || self.phases.all(p, !has(p.growth))",
        message=(
            "phases[].growth: dataset.source's files load whole in the first insert phase, "
            "not in parts; remove growth (measure after a load of the files, then grow with "
            "later insert phases) or remove dataset.source"
        ),
        field="phases",
        holds=lambda s: s.dataset.source is None or all(p.growth is None for p in s.phases),
    ),
)
