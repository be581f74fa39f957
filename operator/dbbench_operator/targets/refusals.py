"""What a database's refusal means and what to do about it (pure).

The operator's setup logs in with the run's credentials and sends a few
statements; a driver error there is reported as a CamelCase reason and a
sentence saying what it means and the likely fix, never as the driver's text
(which echoes users, hosts and URIs: `redaction`). The codes are the
drivers' own: MySQL/MariaDB error numbers (mysql.connector's `errno`),
PostgreSQL SQLSTATEs (psycopg's `sqlstate`, or the server's words for a
refused connection, which libpq reports without one), MongoDB command codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dbbench_operator.redaction import driver_error

# Why the operator cannot use the server, as a condition reason.
HOST_NOT_ALLOWED = "HostNotAllowed"
ACCESS_DENIED = "AccessDenied"
LOGIN_REFUSED = "LoginRefused"
PERMISSION_DENIED = "PermissionDenied"
UNKNOWN_DATABASE = "UnknownDatabase"
REPLICATION_NOT_CONFIGURABLE = "ReplicationNotConfigurable"
TOO_MANY_CONNECTIONS = "TooManyConnections"
UNREACHABLE = "DatabaseUnreachable"
SETUP_FAILED = "SetupFailed"
REASONS = frozenset({
    HOST_NOT_ALLOWED, ACCESS_DENIED, LOGIN_REFUSED, PERMISSION_DENIED, UNKNOWN_DATABASE,
    REPLICATION_NOT_CONFIGURABLE, TOO_MANY_CONNECTIONS, UNREACHABLE, SETUP_FAILED,
})  # fmt: skip

# mysql.connector errno -> reason (server errors, then client errors 2xxx).
_MYSQL = {
    1130: HOST_NOT_ALLOWED,  # ER_HOST_NOT_PRIVILEGED
    1045: ACCESS_DENIED,  # ER_ACCESS_DENIED_ERROR
    1698: ACCESS_DENIED,  # ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    1251: ACCESS_DENIED,  # ER_NOT_SUPPORTED_AUTH_MODE
    1044: PERMISSION_DENIED,  # ER_DBACCESS_DENIED_ERROR
    1142: PERMISSION_DENIED,  # ER_TABLEACCESS_DENIED_ERROR
    1227: PERMISSION_DENIED,  # ER_SPECIFIC_ACCESS_DENIED_ERROR
    1049: UNKNOWN_DATABASE,  # ER_BAD_DB_ERROR
    1200: REPLICATION_NOT_CONFIGURABLE,  # ER_BAD_SLAVE: not configured as a replica
    1201: REPLICATION_NOT_CONFIGURABLE,  # ER_MASTER_INFO
    1236: REPLICATION_NOT_CONFIGURABLE,  # fatal error reading the source's binary log
    1381: REPLICATION_NOT_CONFIGURABLE,  # ER_NO_BINARY_LOGGING
    1777: REPLICATION_NOT_CONFIGURABLE,  # auto-position needs GTID mode
    1794: REPLICATION_NOT_CONFIGURABLE,  # ER_SLAVE_CONFIGURATION
    1872: REPLICATION_NOT_CONFIGURABLE,  # ER_SLAVE_RLI_INIT_REPOSITORY
    1126: REPLICATION_NOT_CONFIGURABLE,  # ER_CANT_OPEN_LIBRARY: the semi-sync plugin
    1193: REPLICATION_NOT_CONFIGURABLE,  # ER_UNKNOWN_SYSTEM_VARIABLE (a plugin's setting)
    1238: REPLICATION_NOT_CONFIGURABLE,  # ER_INCORRECT_GLOBAL_LOCAL_VAR: read-only setting
    3021: REPLICATION_NOT_CONFIGURABLE,  # ER_SLAVE_CHANNEL_MUST_STOP
    1040: TOO_MANY_CONNECTIONS,  # ER_CON_COUNT_ERROR
    1203: TOO_MANY_CONNECTIONS,  # ER_TOO_MANY_USER_CONNECTIONS
    2002: UNREACHABLE,  # CR_CONNECTION_ERROR
    2003: UNREACHABLE,  # CR_CONN_HOST_ERROR
    2005: UNREACHABLE,  # CR_UNKNOWN_HOST
    2006: UNREACHABLE,  # CR_SERVER_GONE_ERROR
    2013: UNREACHABLE,  # CR_SERVER_LOST
    2055: UNREACHABLE,  # CR_SERVER_LOST_EXTENDED
}
# PostgreSQL SQLSTATE (or its class, the first two characters) -> reason.
_POSTGRES = {
    "28P01": ACCESS_DENIED,  # invalid_password
    "28000": LOGIN_REFUSED,  # invalid_authorization_specification: no such role, or pg_hba
    "3D000": UNKNOWN_DATABASE,  # invalid_catalog_name
    "42501": PERMISSION_DENIED,  # insufficient_privilege
    "53300": TOO_MANY_CONNECTIONS,  # too_many_connections
    "55000": REPLICATION_NOT_CONFIGURABLE,  # object_not_in_prerequisite_state (wal_level)
    "53400": REPLICATION_NOT_CONFIGURABLE,  # configuration_limit_exceeded (senders, slots)
    "55P02": REPLICATION_NOT_CONFIGURABLE,  # cant_change_runtime_param
    "08": UNREACHABLE,  # connection_exception
    "57P": UNREACHABLE,  # operator intervention: shutting down, starting up
}
# libpq reports a refused connection without a SQLSTATE: the server's words
# (matched here, never shown) say which one it was.
_POSTGRES_WORDS = (
    (re.compile(r"password authentication failed"), "28P01"),
    (re.compile(r"role \S+ does not exist|no pg_hba\.conf entry"), "28000"),
    (re.compile(r"database \S+ does not exist"), "3D000"),
    (re.compile(r"too many clients|remaining connection slots"), "53300"),
    (re.compile(r"the database system is (starting up|shutting down|in recovery mode)"), "57P03"),
)
# MongoDB command codes -> reason.
_MONGODB = {
    18: ACCESS_DENIED,  # AuthenticationFailed
    11: ACCESS_DENIED,  # UserNotFound
    13: PERMISSION_DENIED,  # Unauthorized
    26: UNKNOWN_DATABASE,  # NamespaceNotFound
    76: REPLICATION_NOT_CONFIGURABLE,  # NoReplicationEnabled
    93: REPLICATION_NOT_CONFIGURABLE,  # InvalidReplicaSetConfig
    94: REPLICATION_NOT_CONFIGURABLE,  # NotYetInitialized
    6: UNREACHABLE,  # HostUnreachable
    7: UNREACHABLE,  # HostNotFound
    89: UNREACHABLE,  # NetworkTimeout
}

_MEANING = {
    HOST_NOT_ALLOWED: "the server has no user the operator may log in as from its address",
    ACCESS_DENIED: "the server refused the operator's user name and password",
    LOGIN_REFUSED: "the server refused the operator's login (no such user, or its client "
    "authentication rules admit no such login)",
    PERMISSION_DENIED: "the operator's user lacks a privilege the setup needs",
    UNKNOWN_DATABASE: "the database the operator connects to does not exist",
    REPLICATION_NOT_CONFIGURABLE: "the server refused a replication setting (binary log, "
    "GTIDs, server id, semi-sync plugin, WAL settings)",
    TOO_MANY_CONNECTIONS: "the server refuses new connections: its connection limit is reached",
    UNREACHABLE: "the server does not answer the operator (still starting, restarting, or not "
    "listening there)",
    SETUP_FAILED: "the server refused a setup statement",
}


@dataclass(frozen=True)
class Logs:
    """Where the server's own log is: the pod and container of a deployed target."""

    namespace: str
    pod: str
    container: str

    def command(self) -> str:
        return f"kubectl logs -n {self.namespace} {self.pod} -c {self.container}"


_LOGIN = (HOST_NOT_ALLOWED, ACCESS_DENIED, LOGIN_REFUSED, PERMISSION_DENIED)
# The likely fix for a deployed target; {logs} is the command that shows its log.
_DEPLOYED_FIX = {
    **dict.fromkeys(_LOGIN, "the server's users were not created (a first start that did not "
                    "complete) or the credentials Secret does not match the data volume's "
                    "users; look at the server's first start in its log: {logs}"),
    UNKNOWN_DATABASE: "the server's first start creates it; look at that start in its log: {logs}",
    REPLICATION_NOT_CONFIGURABLE: "the chart's server flags set these; look at the server's "
    "log: {logs}",
    TOO_MANY_CONNECTIONS: "raise settings.max_connections or use fewer runner threads; {logs}",
}  # fmt: skip
# ... and for an external target; {secret} is the field naming its URI's Secret.
_EXTERNAL_FIX = {
    **dict.fromkeys(_LOGIN, "check the user and password in the URI of {secret} against the "
                    "server's users and grants"),
    UNKNOWN_DATABASE: "create the database or name an existing one in the URI of {secret}",
}  # fmt: skip


def _fix(reason: str, logs: Logs | None, secret_field: str) -> str:
    """The likely fix: for a deployed target its first start, for an external one its users."""
    if logs is None:
        template = _EXTERNAL_FIX.get(
            reason, "check that the server runs and accepts connections from the cluster"
        )
        return template.format(secret=secret_field)
    template = _DEPLOYED_FIX.get(reason, "look at the server's log: {logs}")
    return template.format(logs=logs.command())


def _code(engine: str, exc: BaseException) -> tuple[str, str]:
    """(reason, how the driver said it: `MySQL error 1130`, `PostgreSQL SQLSTATE 28P01`)."""
    errno = getattr(exc, "errno", None)
    if engine in ("mysql", "mariadb") and isinstance(errno, int) and errno:
        name = "MariaDB" if engine == "mariadb" else "MySQL"
        return _MYSQL.get(errno, SETUP_FAILED), f"{name} error {errno}"
    if engine == "postgresql":
        state = getattr(exc, "sqlstate", None)
        if not isinstance(state, str) or not state:
            text = str(exc)
            state = next((s for pattern, s in _POSTGRES_WORDS if pattern.search(text)), "08000")
        reason = _POSTGRES.get(state) or _POSTGRES.get(state[:3]) or _POSTGRES.get(state[:2])
        return reason or SETUP_FAILED, f"PostgreSQL SQLSTATE {state}"
    code = getattr(exc, "code", None)
    if engine == "mongodb" and isinstance(code, int) and code:
        return _MONGODB.get(code, SETUP_FAILED), f"MongoDB code {code}"
    return UNREACHABLE, driver_error(exc)


@dataclass(frozen=True)
class Refusal:
    reason: str  # one of REASONS
    message: str  # what it means, the driver's code, and the likely fix


def explain(
    engine: str, exc: BaseException, *, logs: Logs | None = None, secret_field: str = ""
) -> Refusal:
    """`exc` (a driver error during setup) as a reason and a sentence.

    `logs`: the server's pod and container (a deployed target); None for an
    external target, whose URI is in `secret_field`.
    """
    reason, said = _code(engine, exc)
    return Refusal(reason, f"{_MEANING[reason]} ({said}): {_fix(reason, logs, secret_field)}")


def unreachable(said: str, *, logs: Logs | None = None, secret_field: str = "") -> Refusal:
    """A server that did not answer at all (`said`: the driver's error type and code)."""
    return Refusal(
        UNREACHABLE, f"{_MEANING[UNREACHABLE]} ({said}): {_fix(UNREACHABLE, logs, secret_field)}"
    )
