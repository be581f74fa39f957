"""The driver contract against a real MariaDB (10.11, Debian) started by the fixture."""

from __future__ import annotations

import pytest

from tests.fixtures.mariadb import MariaDBServer
from tests.integration.runner.sql_contract import SqlContract

pytestmark = pytest.mark.integration


class TestMariaDBContract(SqlContract):
    engine = "mariadb"

    @pytest.fixture
    def server(self, mariadb: MariaDBServer) -> MariaDBServer:
        return mariadb
