"""Shared fixtures: real processes only (control plane, MariaDB, MySQL, PostgreSQL,
FerretDB, gated mongod)."""

pytest_plugins = [
    "tests.fixtures.controlplane",
    "tests.fixtures.localcluster",
    "tests.fixtures.mariadb",
    "tests.fixtures.mysql",
    "tests.fixtures.postgres",
    "tests.fixtures.ferretdb",
    "tests.fixtures.mongod",
]
