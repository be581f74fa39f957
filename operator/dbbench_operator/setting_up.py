"""Topology setup through the drivers, once a target's pods are ready.

Connects to the databases with the run's generated credentials (read from
the run's Secret, never logged) and runs the idempotent setup passes of the
topology package. Connection failures are "not ready yet", not errors: pods
can be Ready before the server accepts logins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import mysql.connector

from dbbench_operator import kube
from dbbench_operator.model import Target
from dbbench_operator.naming import RunRef, credentials_secret_name
from dbbench_operator.observations import TargetSeen
from dbbench_operator.topology import naming as topology_naming
from dbbench_operator.topology.mysql_replication import (
    Member,
    ReplicationCredentials,
    ensure_replication,
)
from dbbench_operator.topology.request import (
    SECRET_PASSWORD_KEY,
    SECRET_REPLICATION_PASSWORD_KEY,
    TopologyRequest,
)
from dbbench_operator.topology.sql_session import ConnectorSession, connect

REPLICATION_USER = "dbbench_repl"
MYSQL_ROOT = "root"


def _secret(request: TopologyRequest, key: str) -> str:
    value = kube.read_secret_key(request.namespace, request.credentials_secret, key)
    if value is None:
        raise LookupError(f"Secret {request.credentials_secret} has no key {key}")
    return value.decode()


@contextlib.contextmanager
def _sessions(hosts: list[tuple[str, int]], password: str) -> Iterator[list[ConnectorSession]]:
    opened: list[ConnectorSession] = []
    try:
        for host, port in hosts:
            opened.append(connect(host, port, MYSQL_ROOT, password))
        yield opened
    finally:
        for session in opened:
            session.close()


def _split(host_port: str) -> tuple[str, int]:
    host, _, port = host_port.rpartition(":")
    return host, int(port)


def set_up_mysql(request: TopologyRequest, endpoint: str) -> TargetSeen:
    group = topology_naming.layout(request).replica_sets[0]
    hosts = [_split(h) for h in group.hosts]
    try:
        with _sessions(hosts, _secret(request, SECRET_PASSWORD_KEY)) as sessions:
            members = [
                Member(group.pod(i), host, port, session)
                for i, ((host, port), session) in enumerate(zip(hosts, sessions, strict=True))
            ]
            readiness = ensure_replication(
                members[0],
                members[1:],
                ReplicationCredentials(
                    REPLICATION_USER, _secret(request, SECRET_REPLICATION_PASSWORD_KEY)
                ),
                request.engine,
                semi_sync=request.durability == "strict",
            )
            version = str(sessions[0].query("SELECT VERSION() AS v")[0]["v"])
    except mysql.connector.Error as exc:
        return TargetSeen(
            request.target_name, False, "WaitingForDatabase",
            f"{type(exc).__name__} (errno {exc.errno})", endpoint,
        )  # fmt: skip
    reason = "Ready" if readiness.ready else readiness.reason.split(" ")[0]
    return TargetSeen(
        request.target_name, readiness.ready, reason,
        readiness.message, endpoint, version,
    )  # fmt: skip


def set_up(request: TopologyRequest, endpoint: str) -> TargetSeen:
    if request.engine in ("mysql", "mariadb"):
        return set_up_mysql(request, endpoint)
    return set_up_mongodb(request, endpoint)


def set_up_mongodb(request: TopologyRequest, endpoint: str) -> TargetSeen:
    raise NotImplementedError  # wired to topology.mongo_setup below


def verify_external(run: RunRef, target: Target) -> TargetSeen:
    raise NotImplementedError  # wired to topology.external below


_ = credentials_secret_name
