"""PostgreSQL schema and statements for each shape and idMode.

The same tables, keys and indexes as schema.mysql, in PostgreSQL's dialect:
double-quoted identifiers (the shapes' column names are mixed case), BIGINT,
TIMESTAMP and VARCHAR (never CHAR, which PostgreSQL pads with blanks on
read), indexes as separate CREATE INDEX IF NOT EXISTS statements with
table-qualified names (index names are per schema, not per table).
- idMode client: the key column is the PRIMARY KEY.
- idMode server: no primary key (rows live in the heap by ctid); the key is an
  ordinary column, indexed except for flat45 (benchmark 1's case d).
- news Tags: the child table `news_tags (ID, position, tag)`, indexed on tag
  unless tagsIndex is false.
- vehicle: 14 tables and the 14-table read (schema.postgresql_vehicle).
Values never enter statement text: they are bound parameters (%s).
Rows' parameters and the child rows are the shape's, shared with schema.mysql.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import Column, DatasetGenerator
from dbbench_runner.datasets.flat45 import Flat45
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.schema import mysql as shared
from dbbench_runner.schema import postgresql_vehicle as vehicle

# Neutral helpers (parameters, child rows), the same for both SQL dialects.
insert_params = shared.insert_params
update_params = shared.update_params
query_params = shared.query_params
has_child_table = shared.has_child_table
child_params = shared.child_params
child_width = shared.child_width
read_is_joined = shared.read_is_joined
tags_column = shared.tags_column
tags_table = shared.tags_table
plain_columns = shared.plain_columns
storage_tables = shared.storage_tables

# Bound parameters per statement: the protocol counts them in 16 bits.
MAX_PARAMETERS = 65_535


def q(name: str) -> str:
    """A quoted identifier (names come from the shapes, never from user input)."""
    return f'"{name}"'


def _type(column: Column) -> str:
    if column.kind in ("key_int", "int"):
        return "BIGINT NOT NULL"
    if column.kind == "datetime":
        return "TIMESTAMP NOT NULL"
    return f"VARCHAR({column.size}) NOT NULL"


def _index(table: str, name: str, columns: str) -> str:
    return f"CREATE INDEX IF NOT EXISTS {q(f'{table}_{name}')} ON {q(table)} ({columns})"


def create_statements(dataset: DatasetGenerator, id_mode: str) -> list[str]:
    """Idempotent DDL: every pod runs it (serialized by the driver's advisory lock)."""
    if isinstance(dataset, Vehicle):
        return vehicle.create_statements(dataset, id_mode)
    table, key = dataset.table, dataset.key_column
    definitions = [f"{q(c.name)} {_type(c)}" for c in plain_columns(dataset)]
    if id_mode == "client":
        definitions.append(f"PRIMARY KEY ({q(key)})")
    body = ",\n  ".join(definitions)
    statements = [f"CREATE TABLE IF NOT EXISTS {q(table)} (\n  {body}\n)"]
    if id_mode == "server" and not isinstance(dataset, Flat45):
        statements.append(_index(table, f"ix_{key}", q(key)))
    for column in plain_columns(dataset):
        if column.indexed:
            order = " DESC" if column.descending else ""
            statements.append(_index(table, f"ix_{column.name}", f"{q(column.name)}{order}"))
    tags = tags_column(dataset)
    if tags is not None:
        child = tags_table(dataset)
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {q(child)} (\n"
            f"  {q(key)} BIGINT NOT NULL,\n  position SMALLINT NOT NULL,\n"
            f"  tag VARCHAR({tags.size}) NOT NULL,\n  PRIMARY KEY ({q(key)}, position)\n)"
        )
        if tags.indexed:
            statements.append(_index(child, "ix_tag", "tag"))
    return statements


def fill_statements(dataset: DatasetGenerator) -> list[tuple[str, list[object]]]:
    """Statements with parameters that fill fixed tables (vehicle's lookups)."""
    if isinstance(dataset, Vehicle):
        return vehicle.fill_statements(dataset)
    return []


def insert_statement(dataset: DatasetGenerator, rows: int) -> str:
    if isinstance(dataset, Vehicle):
        return vehicle.insert_statement(dataset, rows)
    names = [c.name for c in plain_columns(dataset)]
    columns = ", ".join(q(n) for n in names)
    one = "(" + ", ".join(["%s"] * len(names)) + ")"
    return f"INSERT INTO {q(dataset.table)} ({columns}) VALUES " + ", ".join([one] * rows)


def child_statement(dataset: DatasetGenerator, rows: int) -> str:
    if isinstance(dataset, Vehicle):
        return vehicle.items_statement(dataset, rows)
    values = ", ".join(["(%s, %s, %s)"] * rows)
    key = q(dataset.key_column)
    return f"INSERT INTO {q(tags_table(dataset))} ({key}, position, tag) VALUES {values}"


def read_statement(dataset: DatasetGenerator) -> str:
    """A Read: the record by key; for vehicle, the vehicle's latest test, joined."""
    if isinstance(dataset, Vehicle):
        return vehicle.read_statement(dataset)
    return record_read_statement(dataset)


def record_read_statement(dataset: DatasetGenerator) -> str:
    return f"SELECT * FROM {q(dataset.table)} WHERE {q(dataset.key_column)} = %s"


def update_statement(dataset: DatasetGenerator) -> str:
    sets = ", ".join(f"{q(n)} = %s" for n in dataset.update_columns)
    return f"UPDATE {q(dataset.table)} SET {sets} WHERE {q(dataset.key_column)} = %s"


def scan_statement(dataset: DatasetGenerator, count: int) -> str:
    key = q(dataset.key_column)
    return f"SELECT * FROM {q(dataset.table)} WHERE {key} >= %s ORDER BY {key} LIMIT {int(count)}"


# Field benchmark 2's queries on indexed4, as in schema.mysql (no hints).
QUERIES: dict[str, str] = {
    "indexedEquality": 'SELECT * FROM "{table}" WHERE "Number" = %s LIMIT 10',
    "twoFieldProjection": (
        'SELECT "Number", "Number1" FROM "{table}" WHERE "Number" = %s AND "Number1" >= %s LIMIT 10'
    ),
    "sortSkip": (
        'SELECT * FROM "{table}" WHERE "Number" >= %s ORDER BY "Date" DESC LIMIT 10 OFFSET 100'
    ),
    "scan100": 'SELECT * FROM "{table}" LIMIT 100',
}

# Sizes of every table of the schema (child and lookup tables are part of a
# record's cost): heap with TOAST and maps, indexes, both; the planner's row
# estimate of the main table (parameter), -1 before the first ANALYZE, as 0.
# Sizes of the record's tables (schema.mysql.storage_tables: the other idMode's
# table is not among them); parameters: the main table, then the table names.
STORAGE_STATEMENT = (
    "SELECT COALESCE(SUM(pg_table_size(c.oid)), 0)::bigint, "
    "COALESCE(SUM(pg_indexes_size(c.oid)), 0)::bigint, "
    "COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint, "
    "GREATEST(COALESCE(MAX(CASE WHEN c.relname = %s THEN c.reltuples END), 0), 0)::bigint "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
    "AND c.relname = ANY(%s)"
)


# Blocks read from disk (not found in shared_buffers) for the benchmark's database.
DISK_READS = "blks_read"
DISK_READS_STATEMENT = (
    "SELECT pg_stat_clear_snapshot(), blks_read FROM pg_stat_database "
    "WHERE datname = current_database()"
)


def query_statement(dataset: DatasetGenerator, name: str) -> str:
    return QUERIES[name].format(table=dataset.table)


SETTINGS = (
    "server_version",
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "max_connections",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "wal_buffers",
    "wal_compression",
    "wal_sync_method",
    "max_wal_size",
    "checkpoint_timeout",
    "synchronous_standby_names",
    "default_transaction_isolation",
    "in_hot_standby",
    "jit",
)
# Name and value in the server's own units ("128MB"), plus shared_buffers in bytes.
SETTINGS_STATEMENT = (
    "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s) "
    "UNION ALL SELECT 'shared_buffers_bytes', "
    "pg_size_bytes(current_setting('shared_buffers'))::text"
)
