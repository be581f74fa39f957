"""Shared fixtures: real processes only (control plane, MariaDB servers)."""

pytest_plugins = [
    "tests.fixtures.controlplane",
    "tests.fixtures.localcluster",
    "tests.fixtures.mariadb",
]
