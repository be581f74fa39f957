"""The driver contract with `engine: mysql` against a real Oracle MySQL 9.7.

The server runs from the Debian-unstable root `make tools` builds (see
dbbench_local.mysqld); the fixture fails, never skips, when it is missing.
"""

from __future__ import annotations

import pytest

from tests.fixtures.mysql import MySQLServer
from tests.integration.runner.sql_contract import SqlContract, rows

pytestmark = pytest.mark.integration


class TestMySQLContract(SqlContract):
    engine = "mysql"

    @pytest.fixture
    def server(self, mysql_server: MySQLServer) -> MySQLServer:
        return mysql_server

    def test_the_server_is_oracle_mysql(self, mysql_server: MySQLServer) -> None:
        """Guard: these results mean nothing if a MariaDB answered instead."""
        version = rows(mysql_server, "mysql", "SELECT @@version AS v, @@version_comment AS c")[0]
        assert str(version["v"]).startswith("9."), version
        assert "mariadb" not in str(version["c"]).lower(), version
