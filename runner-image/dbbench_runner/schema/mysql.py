"""MySQL / MariaDB schema and statements for each shape and idMode.

- idMode client: the shape's key column is the PRIMARY KEY.
- idMode server: no primary key is declared (InnoDB keeps its hidden row id);
  the key is an ordinary column, indexed except for flat45 (benchmark 1's case
  d has no index on the md5 column).
- news Tags: a child table `news_tags (ID, position, tag)` with an index on tag,
  the relational counterpart of MongoDB's multikey index.
- vehicle: 14 normalized tables and a 14-table read (schema.vehicle); the
  functions here dispatch to it.
Identifiers come from the shapes (fixed names), never from user input.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import Column, DatasetGenerator, Record
from dbbench_runner.datasets.flat45 import Flat45
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.schema import vehicle

TAGS = "tags"


def _type(column: Column) -> str:
    if column.kind in ("key_int", "int"):
        return "BIGINT NOT NULL"
    if column.kind == "datetime":
        return "DATETIME NOT NULL"
    if column.kind == "key_str" and column.size <= 32:
        return f"CHAR({column.size}) NOT NULL"
    return f"VARCHAR({column.size}) NOT NULL"


def plain_columns(dataset: DatasetGenerator) -> tuple[Column, ...]:
    """Columns stored in the main table (Tags live in the child table)."""
    return tuple(c for c in dataset.columns if c.kind != TAGS)


def tags_column(dataset: DatasetGenerator) -> Column | None:
    return next((c for c in dataset.columns if c.kind == TAGS), None)


def tags_table(dataset: DatasetGenerator) -> str:
    return f"{dataset.table}_tags"


def create_statements(dataset: DatasetGenerator, id_mode: str) -> list[str]:
    """CREATE TABLE IF NOT EXISTS statements: idempotent, so every pod may run them."""
    if isinstance(dataset, Vehicle):
        return vehicle.create_statements(dataset, id_mode)
    key = dataset.key_column
    definitions = [f"`{c.name}` {_type(c)}" for c in plain_columns(dataset)]
    if id_mode == "client":
        definitions.append(f"PRIMARY KEY (`{key}`)")
    elif not isinstance(dataset, Flat45):  # benchmark 1's mode d: md5 not indexed
        definitions.append(f"KEY `ix_{key}` (`{key}`)")
    for column in plain_columns(dataset):
        if column.indexed:
            order = " DESC" if column.descending else ""
            definitions.append(f"KEY `ix_{column.name}` (`{column.name}`{order})")
    body = ",\n  ".join(definitions)
    statements = [f"CREATE TABLE IF NOT EXISTS `{dataset.table}` (\n  {body}\n) ENGINE=InnoDB"]
    tags = tags_column(dataset)
    if tags is not None:
        index = ",\n  KEY `ix_tag` (`tag`)" if tags.indexed else ""
        statements.append(
            f"CREATE TABLE IF NOT EXISTS `{tags_table(dataset)}` (\n"
            f"  `{key}` BIGINT NOT NULL,\n  `position` TINYINT NOT NULL,\n"
            f"  `tag` VARCHAR({tags.size}) NOT NULL,\n"
            f"  PRIMARY KEY (`{key}`, `position`){index}\n) ENGINE=InnoDB"
        )
    return statements


def fill_statements(dataset: DatasetGenerator) -> list[tuple[str, list[object]]]:
    """Statements with parameters that fill fixed tables after creating them (vehicle's lookups)."""
    if isinstance(dataset, Vehicle):
        return vehicle.fill_statements(dataset)
    return []


def insert_statement(dataset: DatasetGenerator, rows: int) -> str:
    if isinstance(dataset, Vehicle):
        return vehicle.insert_statement(dataset, rows)
    names = [c.name for c in plain_columns(dataset)]
    columns = ", ".join(f"`{n}`" for n in names)
    one = "(" + ", ".join(["%s"] * len(names)) + ")"
    return f"INSERT INTO `{dataset.table}` ({columns}) VALUES " + ", ".join([one] * rows)


def insert_params(dataset: DatasetGenerator, records: tuple[Record, ...]) -> list[object]:
    if isinstance(dataset, Vehicle):
        return vehicle.insert_params(dataset, records)
    names = [c.name for c in plain_columns(dataset)]
    return [record[n] for record in records for n in names]


def tags_params(dataset: DatasetGenerator, records: tuple[Record, ...]) -> list[object]:
    """Rows of the news Tags child table: (ID, position, tag) per tag, flattened."""
    tags = tags_column(dataset)
    assert tags is not None
    key = dataset.key_column
    params: list[object] = []
    for record in records:
        values = record[tags.name]
        assert isinstance(values, list)
        for position, tag in enumerate(values):
            params.extend((record[key], position, tag))
    return params


def tags_statement(dataset: DatasetGenerator, rows: int) -> str:
    key = dataset.key_column
    values = ", ".join(["(%s, %s, %s)"] * rows)
    return f"INSERT INTO `{tags_table(dataset)}` (`{key}`, `position`, `tag`) VALUES {values}"


def has_child_table(dataset: DatasetGenerator) -> bool:
    """Whether a record's insert also writes child rows (news Tags, vehicle Items)."""
    return isinstance(dataset, Vehicle) or tags_column(dataset) is not None


def child_params(dataset: DatasetGenerator, records: tuple[Record, ...]) -> list[object]:
    """The child-table rows of a batch, flattened (child_width values per row)."""
    if isinstance(dataset, Vehicle):
        return vehicle.items_params(dataset, records)
    return tags_params(dataset, records)


def child_width(dataset: DatasetGenerator) -> int:
    return vehicle.ITEM_WIDTH if isinstance(dataset, Vehicle) else 3


def child_statement(dataset: DatasetGenerator, rows: int) -> str:
    if isinstance(dataset, Vehicle):
        return vehicle.items_statement(dataset, rows)
    return tags_statement(dataset, rows)


def read_statement(dataset: DatasetGenerator) -> str:
    """A Read: the record by key; for vehicle, the vehicle's latest test, joined."""
    if isinstance(dataset, Vehicle):
        return vehicle.read_statement(dataset)
    return record_read_statement(dataset)


def read_is_joined(dataset: DatasetGenerator) -> bool:
    """Whether a Read's statement returns one row per child row (vehicle: per item)."""
    return isinstance(dataset, Vehicle)


def record_read_statement(dataset: DatasetGenerator) -> str:
    """One record by its key (read-modify-write reads the record it writes)."""
    key = dataset.key_column
    return f"SELECT * FROM `{dataset.table}` WHERE `{key}` = %s"


def update_statement(dataset: DatasetGenerator) -> str:
    sets = ", ".join(f"`{n}` = %s" for n in dataset.update_columns)
    return f"UPDATE `{dataset.table}` SET {sets} WHERE `{dataset.key_column}` = %s"


def update_params(dataset: DatasetGenerator, key: str | int, fields: Record) -> list[object]:
    return [*(fields[n] for n in dataset.update_columns), key]


def scan_statement(dataset: DatasetGenerator, count: int) -> str:
    key = dataset.key_column
    return (
        f"SELECT * FROM `{dataset.table}` WHERE `{key}` >= %s ORDER BY `{key}` LIMIT {int(count)}"
    )


# Field benchmark 2's queries on indexed4 (or indexed4_serverkey), with the same
# meaning as the MongoDB finds in schema.mongodb (no index hints: the optimizer
# chooses).
QUERIES: dict[str, str] = {
    "indexedEquality": "SELECT * FROM `{table}` WHERE `Number` = %s LIMIT 10",
    "twoFieldProjection": (
        "SELECT `Number`, `Number1` FROM `{table}` WHERE `Number` = %s AND `Number1` >= %s LIMIT 10"
    ),
    "sortSkip": (
        "SELECT * FROM `{table}` WHERE `Number` >= %s ORDER BY `Date` DESC LIMIT 10 OFFSET 100"
    ),
    "scan100": "SELECT * FROM `{table}` LIMIT 100",
}


def query_statement(dataset: DatasetGenerator, name: str) -> str:
    return QUERIES[name].format(table=dataset.table)


def query_params(name: str, number: int, number1: int) -> list[object]:
    if name == "twoFieldProjection":
        return [number, number1]
    if name == "scan100":
        return []
    return [number]


def storage_tables(dataset: DatasetGenerator) -> tuple[str, ...]:
    """The tables a record's cost is spread over: the main table and its child and
    lookup tables. The other idMode's table in the same database is not among them."""
    if isinstance(dataset, Vehicle):
        return vehicle.tables(dataset)
    if tags_column(dataset) is not None:
        return (dataset.table, tags_table(dataset))
    return (dataset.table,)


def storage_statement(dataset: DatasetGenerator) -> str:
    """Sizes of the record's tables (storage_tables); the engine's row estimate of the
    main table only, like MongoDB's collection count. Parameters: the main table,
    the database, then each of storage_tables."""
    names = ", ".join(["%s"] * len(storage_tables(dataset)))
    return (
        "SELECT COALESCE(SUM(data_length), 0), COALESCE(SUM(index_length), 0), "
        "COALESCE(SUM(data_length + index_length + data_free), 0), "
        "COALESCE(SUM(CASE WHEN table_name = %s THEN table_rows END), 0) "
        f"FROM information_schema.tables WHERE table_schema = %s AND table_name IN ({names})"
    )


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


def disk_reads_statement() -> str:
    return f"SHOW GLOBAL STATUS LIKE '{DISK_READS}'"
