"""`AdminClient` over pymongo, translating its errors to the setup's own.

The translated errors carry the driver exception's type and code only
(`redaction.driver_error`): pymongo's text names hosts and, for refused
logins, the user, and it reaches the run's status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import MongoClient
from pymongo.errors import ConnectionFailure, OperationFailure

from dbbench_operator.redaction import driver_error
from dbbench_operator.targets.mongodb.setup import CommandFailedError, UnreachableError

# Internal (keyFile) identity: lets the operator set up --configsvr/--shardsvr
# members before any user exists there (the official entrypoint cannot create
# one for them); the keyFile text is the password.
INTERNAL_USER = "__system"
INTERNAL_AUTH_SOURCE = "local"
# No admin call waits forever: a member that accepts the connection and then
# stops answering fails the call (UnreachableError) after this long. Setup
# commands (replSetInitiate, addShard, shardCollection) answer within seconds.
SOCKET_TIMEOUT_MS = 30_000


class PymongoAdmin:
    def __init__(self, client: MongoClient[dict[str, Any]]) -> None:
        self._client = client

    def admin_command(self, command: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return dict(self._client.admin.command(dict(command)))
        except OperationFailure as exc:
            raise CommandFailedError(int(exc.code or 0), driver_error(exc)) from exc
        except ConnectionFailure as exc:
            raise UnreachableError(driver_error(exc)) from exc

    def database_command(self, database: str, command: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return dict(self._client[database].command(dict(command)))
        except OperationFailure as exc:
            raise CommandFailedError(int(exc.code or 0), driver_error(exc)) from exc
        except ConnectionFailure as exc:
            raise UnreachableError(driver_error(exc)) from exc

    def close(self) -> None:
        self._client.close()


def connect(
    host: str,
    *,
    username: str | None,
    password: str | None,
    auth_source: str = "admin",
    direct: bool = True,
    timeout_ms: int = 5000,
    socket_timeout_ms: int = SOCKET_TIMEOUT_MS,
) -> PymongoAdmin:
    """A client for one member (direct) or one mongos; lazy, so it never raises here."""
    options: dict[str, Any] = {
        "directConnection": direct,
        "serverSelectionTimeoutMS": timeout_ms,
        "connectTimeoutMS": timeout_ms,
        "socketTimeoutMS": socket_timeout_ms,
    }
    if username is not None:
        options.update(username=username, password=password, authSource=auth_source)
    return PymongoAdmin(MongoClient(f"mongodb://{host}/", **options))
