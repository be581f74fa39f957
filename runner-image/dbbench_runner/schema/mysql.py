"""MySQL / MariaDB schema and statements for each shape and idMode.

- idMode client: the shape's key column is the PRIMARY KEY.
- idMode server: no primary key is declared (InnoDB keeps its hidden row id);
  the key is an ordinary column, indexed except for flat45 (benchmark 1's case
  d has no index on the md5 column).
- news Tags: a child table `news_tags (ID, position, tag)` with an index on tag,
  the relational counterpart of MongoDB's multikey index.
- vehicle: 14 normalized tables and a 14-table read (schema.vehicle).
The statements and parameters both SQL engines share are schema.sql's; the
DDL, the settings, storage and disk-read queries are MySQL's own.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import Column, DatasetGenerator
from dbbench_runner.schema import sql, vehicle


def q(name: str) -> str:
    """A quoted identifier (names come from the shapes, never from user input)."""
    return f"`{name}`"


def _type(column: Column) -> str:
    if column.kind in ("key_int", "int"):
        return "BIGINT NOT NULL"
    if column.kind == "datetime":
        return "DATETIME NOT NULL"
    if column.kind == "key_str" and column.size <= 32:
        return f"CHAR({column.size}) NOT NULL"
    return f"VARCHAR({column.size}) NOT NULL"


def create_tables(dataset: DatasetGenerator, id_mode: str) -> list[str]:
    """CREATE TABLE IF NOT EXISTS statements, indexes inline: every pod may run them."""
    key = dataset.key_column
    columns = sql.plain_columns(dataset)
    definitions = [f"`{c.name}` {_type(c)}" for c in columns]
    if id_mode == "client":
        definitions.append(f"PRIMARY KEY (`{key}`)")
    elif sql.key_indexed(dataset, id_mode):
        definitions.append(f"KEY `ix_{key}` (`{key}`)")
    for column in columns:
        if column.indexed:
            order = " DESC" if column.descending else ""
            definitions.append(f"KEY `ix_{column.name}` (`{column.name}`{order})")
    body = ",\n  ".join(definitions)
    statements = [f"CREATE TABLE IF NOT EXISTS `{dataset.table}` (\n  {body}\n) ENGINE=InnoDB"]
    tags = sql.tags_column(dataset)
    if tags is not None:
        index = ",\n  KEY `ix_tag` (`tag`)" if tags.indexed else ""
        statements.append(
            f"CREATE TABLE IF NOT EXISTS `{sql.tags_table(dataset)}` (\n"
            f"  `{key}` BIGINT NOT NULL,\n  `position` TINYINT NOT NULL,\n"
            f"  `tag` VARCHAR({tags.size}) NOT NULL,\n"
            f"  PRIMARY KEY (`{key}`, `position`){index}\n) ENGINE=InnoDB"
        )
    return statements


DIALECT = sql.Dialect(quote=q, vehicle=vehicle, create_tables=create_tables)


def storage_statement(dataset: DatasetGenerator) -> str:
    """Sizes of the record's tables (storage_tables); the engine's row estimate of the
    main table only, like MongoDB's collection count. Parameters: the main table,
    the database, then each of storage_tables."""
    names = ", ".join(["%s"] * len(sql.storage_tables(dataset)))
    return (
        "SELECT COALESCE(SUM(data_length), 0), COALESCE(SUM(index_length), 0), "
        "COALESCE(SUM(data_length + index_length + data_free), 0), "
        "COALESCE(SUM(CASE WHEN table_name = %s THEN table_rows END), 0) "
        f"FROM information_schema.tables WHERE table_schema = %s AND table_name IN ({names})"
    )


# MySQL 8+ answers information_schema.TABLES' sizes and row estimates from a
# cache it refreshes every information_schema_stats_expiry seconds (24 hours by
# default): a table first sampled empty kept its 16 KB for the whole run. The
# connection that samples storage sets it to 0 for its own session, so every
# sample asks InnoDB, as MariaDB always does (it has no such variable: the SHOW
# finds no row and nothing is set). InnoDB's row estimate and free space follow
# every insert; its data and index sizes are the page counts of its last
# background statistics recalculation (once a tenth of the table changed).
STATS_EXPIRY_STATEMENT = "SHOW SESSION VARIABLES LIKE 'information_schema_stats_expiry'"
NO_STATS_CACHE_STATEMENT = "SET SESSION information_schema_stats_expiry = 0"


SETTINGS = (
    "version",
    "version_comment",
    "innodb_buffer_pool_size",
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "binlog_format",
    "innodb_log_file_size",
    "innodb_flush_method",
    "innodb_doublewrite",
    "transaction_isolation",
    "max_connections",
    "server_id",
    "read_only",
    "rpl_semi_sync_master_enabled",
    "rpl_semi_sync_source_enabled",
)


def settings_statement() -> str:
    # SHOW works on both engines: MySQL 5.7+ dropped information_schema.GLOBAL_VARIABLES
    # (error 1109), and MariaDB's performance_schema copy is empty unless enabled.
    names = ", ".join(f"'{n}'" for n in SETTINGS)
    return f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})"


# Pages InnoDB read from disk into the buffer pool (reads it could not serve
# from the pool), server-wide since start-up.
DISK_READS = "Innodb_buffer_pool_reads"


# Seconds since the server started (a restart sets it back to 0).
UPTIME_STATEMENT = "SHOW GLOBAL STATUS LIKE 'Uptime'"


def disk_reads_statement() -> str:
    return f"SHOW GLOBAL STATUS LIKE '{DISK_READS}'"
