"""External targets: parse the URI (pure), then probe the server (I/O).

Nothing is deployed; the operator checks that the database answers, which
topology it has, and records the server version. Passwords stay out of every
repr, message and result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote

from dbbench_operator.targets.sql.base import SqlSession

Family = Literal["mongodb", "mysql", "postgresql"]
_DEFAULT_PORTS = {"mongodb": 27017, "mysql": 3306, "postgresql": 5432}
_SCHEMES: dict[str, Family] = {
    "mongodb": "mongodb",
    "mongodb+srv": "mongodb",
    "mysql": "mysql",
    "mariadb": "mysql",
    "postgresql": "postgresql",
    "postgres": "postgresql",
}


def family_of(engine: str) -> Family:
    """Engines one URI scheme serves: MySQL and MariaDB speak one protocol."""
    if engine in ("mongodb", "postgresql"):
        return engine  # type: ignore[return-value]
    return "mysql"


@dataclass(frozen=True)
class ExternalUri:
    scheme: str
    family: Family
    hosts: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None = field(repr=False)
    database: str | None
    options: dict[str, str]

    @property
    def endpoint(self) -> str:
        """host:port list without credentials, safe for status and logs."""
        return ",".join(f"{host}:{port}" for host, port in self.hosts)


def _split_host(text: str, default_port: int) -> tuple[str, int]:
    if text.startswith("["):  # [ipv6]:port
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default_port
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default_port
    if not port.isdigit():
        raise ValueError(f"invalid port in {text!r}")
    return host, int(port)


def parse_uri(uri: str) -> ExternalUri:
    """Parse mongodb://, mongodb+srv://, mysql://, mariadb:// or postgresql:// URIs."""
    scheme, sep, rest = uri.partition("://")
    family = _SCHEMES.get(scheme.lower())
    if not sep or family is None:
        raise ValueError("URI scheme must be mongodb, mongodb+srv, mysql, mariadb or postgresql")
    authority, _, tail = rest.partition("/")
    path, _, query = tail.partition("?")
    if "?" in authority:  # mongodb://host?opts without a slash
        authority, _, query = authority.partition("?")
    userinfo, at, hostlist = authority.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user)
        password = unquote(secret) if colon else None
    if not hostlist:
        raise ValueError("URI has no host")
    default_port = _DEFAULT_PORTS[family]
    hosts = tuple(_split_host(h, default_port) for h in hostlist.split(","))
    if family != "mongodb" and len(hosts) != 1:
        raise ValueError(f"a {family} URI names exactly one host")
    return ExternalUri(
        scheme=scheme.lower(),
        family=family,
        hosts=hosts,
        username=username,
        password=password,
        database=unquote(path) or None,
        options=dict(parse_qsl(query)),
    )


@dataclass(frozen=True)
class ExternalProbe:
    engine: Literal["mongodb", "mysql", "mariadb", "postgresql"]
    topology: str  # standalone | replicaSet | sharded | primaryReplica | replica
    server_version: str
    endpoint: str


def classify_hello(hello: dict[str, Any]) -> str:
    """MongoDB topology from a `hello` reply."""
    if hello.get("msg") == "isdbgrid":
        return "sharded"
    if hello.get("setName"):
        return "replicaSet"
    return "standalone"


def probe_sql(session: SqlSession, endpoint: str) -> ExternalProbe:
    """MySQL/MariaDB: version, then whether this server replicates or has replicas."""
    version = str(session.query("SELECT VERSION() AS v")[0]["v"])
    mariadb = "mariadb" in version.lower()
    status = session.query("SHOW SLAVE STATUS" if mariadb else "SHOW REPLICA STATUS")
    if status:
        topology = "replica"
    else:
        replicas = session.query("SHOW SLAVE HOSTS" if mariadb else "SHOW REPLICAS")
        topology = "primaryReplica" if replicas else "standalone"
    return ExternalProbe("mariadb" if mariadb else "mysql", topology, version, endpoint)


def probe_postgres(session: SqlSession, endpoint: str) -> ExternalProbe:
    """PostgreSQL: version; a standby (in recovery) or a primary with standbys streaming."""
    version = str(session.query("SELECT current_setting('server_version') AS v")[0]["v"])
    if session.query("SELECT pg_is_in_recovery() AS r")[0]["r"]:
        topology = "replica"
    else:
        standbys = session.query("SELECT 1 AS s FROM pg_stat_replication")
        topology = "primaryReplica" if standbys else "standalone"
    return ExternalProbe("postgresql", topology, version, endpoint)


def probe(uri: str, *, timeout_s: float = 10.0) -> ExternalProbe:
    """Connect to an external target and describe it; raises when it does not answer."""
    parsed = parse_uri(uri)
    if parsed.family == "mongodb":
        from pymongo import MongoClient  # noqa: PLC0415 - only for mongodb targets

        timeout_ms = int(timeout_s * 1000)
        client: MongoClient[dict[str, Any]] = MongoClient(
            uri, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms,
            socketTimeoutMS=timeout_ms,
        )  # fmt: skip
        try:
            hello = client.admin.command("hello")
            version = str(client.admin.command("buildInfo")["version"])
        finally:
            client.close()
        return ExternalProbe("mongodb", classify_hello(hello), version, parsed.endpoint)
    host, port = parsed.hosts[0]
    if parsed.family == "postgresql":
        from dbbench_operator.targets.sql import pg_session  # noqa: PLC0415

        database = parsed.database or pg_session.MAINTENANCE_DATABASE
        pg = pg_session.connect(host, port, parsed.username or "postgres", parsed.password or "",
                                database=database, timeout_s=timeout_s)  # fmt: skip
        try:
            return probe_postgres(pg, parsed.endpoint)
        finally:
            pg.close()
    from dbbench_operator.targets.sql.session import connect  # noqa: PLC0415

    session = connect(
        host, port, parsed.username or "root", parsed.password or "", timeout_s=timeout_s
    )
    try:
        return probe_sql(session, parsed.endpoint)
    finally:
        session.close()
