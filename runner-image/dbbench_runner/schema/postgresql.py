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
The statements and parameters both SQL engines share are schema.sql's.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import Column, DatasetGenerator
from dbbench_runner.schema import postgresql_vehicle, sql

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


def create_tables(dataset: DatasetGenerator, id_mode: str) -> list[str]:
    """Idempotent DDL: every pod runs it (serialized by the driver's advisory lock)."""
    table, key = dataset.table, dataset.key_column
    columns = sql.plain_columns(dataset)
    definitions = [f"{q(c.name)} {_type(c)}" for c in columns]
    if id_mode == "client":
        definitions.append(f"PRIMARY KEY ({q(key)})")
    body = ",\n  ".join(definitions)
    statements = [f"CREATE TABLE IF NOT EXISTS {q(table)} (\n  {body}\n)"]
    if sql.key_indexed(dataset, id_mode):
        statements.append(_index(table, f"ix_{key}", q(key)))
    for column in columns:
        if column.indexed:
            order = " DESC" if column.descending else ""
            statements.append(_index(table, f"ix_{column.name}", f"{q(column.name)}{order}"))
    tags = sql.tags_column(dataset)
    if tags is not None:
        child = sql.tags_table(dataset)
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {q(child)} (\n"
            f"  {q(key)} BIGINT NOT NULL,\n  position SMALLINT NOT NULL,\n"
            f"  tag VARCHAR({tags.size}) NOT NULL,\n  PRIMARY KEY ({q(key)}, position)\n)"
        )
        if tags.indexed:
            statements.append(_index(child, "ix_tag", "tag"))
    return statements


DIALECT = sql.Dialect(quote=q, vehicle=postgresql_vehicle, create_tables=create_tables)

# Sizes of every table of the schema (child and lookup tables are part of a
# record's cost): heap with TOAST and maps, indexes, both; the planner's row
# estimate of the main table (parameter), -1 before the first ANALYZE, as 0.
# Sizes of the record's tables (schema.sql.storage_tables: the other idMode's
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


# Seconds since the postmaster started (a restart sets it back).
UPTIME_STATEMENT = (
    "SELECT extract(epoch FROM clock_timestamp() - pg_postmaster_start_time())::float8"
)


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
