"""Topology setup through the drivers, once a target's pods are ready.

Connects to the databases with the run's generated credentials (read from
the run's Secret, never logged) and runs the idempotent setup passes of the
topology package. A driver error is "not usable yet", reported with what it
means and the likely fix (`targets.refusals`): pods can be Ready before the
server accepts logins, and the orchestrator fails the run once such a wait
has lasted spec.startupGrace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import mysql.connector
import psycopg

from dbbench_contract.api import SecretKeyRef, Target
from dbbench_operator.k8s import api, ownership
from dbbench_operator.naming import RunRef
from dbbench_operator.specs.databases import target_names
from dbbench_operator.specs.databases.request import (
    SECRET_KEYFILE_KEY,
    SECRET_PASSWORD_KEY,
    SECRET_REPLICATION_PASSWORD_KEY,
    SECRET_USERNAME_KEY,
    TopologyRequest,
)
from dbbench_operator.status.observations import TargetSeen
from dbbench_operator.targets import external, refusals
from dbbench_operator.targets.mongodb.setup import CommandFailedError
from dbbench_operator.targets.mongodb.sharding import ShardKeyMismatchError
from dbbench_operator.targets.mongodb.target import MongoCredentials
from dbbench_operator.targets.mongodb.target import set_up_mongodb as set_up_mongodb_target
from dbbench_operator.targets.sql import pg_session
from dbbench_operator.targets.sql.mysql_replication import (
    Member,
    ReplicationCredentials,
    ReplicationReadiness,
    ensure_replication,
)
from dbbench_operator.targets.sql.postgres_replication import ensure_streaming
from dbbench_operator.targets.sql.session import ConnectorSession, connect

REPLICATION_USER = "dbbench_repl"
MYSQL_ROOT = "root"
# The server container of each engine's chart, for `kubectl logs -c`.
_CONTAINERS = {"mysql": "mysql", "mariadb": "mariadb", "postgresql": "postgresql",
               "mongodb": "mongod"}  # fmt: skip


class _MemberError(Exception):
    """A driver error while logging in to one member (its ordinal says whose log to read)."""

    def __init__(self, ordinal: int, cause: Exception) -> None:
        super().__init__(type(cause).__name__)
        self.ordinal = ordinal
        self.cause = cause


def _logs(request: TopologyRequest, ordinal: int = 0) -> refusals.Logs:
    group = target_names.layout(request).replica_sets[0]
    return refusals.Logs(request.namespace, group.pod(ordinal), _CONTAINERS[request.engine])


def _refused(
    request: TopologyRequest, endpoint: str, exc: Exception, ordinal: int = 0
) -> TargetSeen:
    """Not usable yet: the driver's error explained (the wait is bounded by the orchestrator)."""
    refusal = refusals.explain(request.engine, exc, logs=_logs(request, ordinal))
    return TargetSeen(request.target_name, False, refusal.reason, refusal.message, endpoint)


def _secret(request: TopologyRequest, key: str) -> str:
    """A key of the run's credentials Secret: only when the run owns the Secret."""
    run = RunRef(request.run_name, request.namespace, request.run_uid)
    value = ownership.secret_value(run, request.credentials_secret, key)
    if value is None:
        raise LookupError(f"Secret {request.credentials_secret} has no key {key}")
    return value.decode()


@contextlib.contextmanager
def _sessions(hosts: list[tuple[str, int]], password: str) -> Iterator[list[ConnectorSession]]:
    opened: list[ConnectorSession] = []
    try:
        for ordinal, (host, port) in enumerate(hosts):
            try:
                opened.append(connect(host, port, MYSQL_ROOT, password))
            except mysql.connector.Error as exc:
                raise _MemberError(ordinal, exc) from exc
        yield opened
    finally:
        for session in opened:
            session.close()


def _split(host_port: str) -> tuple[str, int]:
    host, _, port = host_port.rpartition(":")
    return host, int(port)


def set_up_mysql(request: TopologyRequest, endpoint: str) -> TargetSeen:
    group = target_names.layout(request).replica_sets[0]
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
    except _MemberError as exc:
        return _refused(request, endpoint, exc.cause, exc.ordinal)
    except mysql.connector.Error as exc:
        return _refused(request, endpoint, exc)
    if readiness.failure:
        failure = ("SemiSyncFellBack", f"target {request.target_name}: {readiness.failure}")
        return TargetSeen(request.target_name, False, *failure, endpoint, version, failure=failure)
    reason, detail = _reason(readiness.reason)
    message = "; ".join(part for part in (detail, readiness.message) if part)
    return TargetSeen(request.target_name, readiness.ready, reason, message, endpoint, version)


def set_up_postgresql(request: TopologyRequest, endpoint: str) -> TargetSeen:
    """Streaming replication (standbys copied by the chart's init container), as the
    superuser the image created from the Secret's root-username and root-password."""
    group = target_names.layout(request).replica_sets[0]
    hosts = [_split(h) for h in group.hosts]
    user, password = _secret(request, SECRET_USERNAME_KEY), _secret(request, SECRET_PASSWORD_KEY)
    opened: list[pg_session.PsycopgSession] = []
    try:
        for host, port in hosts:
            try:
                opened.append(pg_session.connect(host, port, user, password))
            except psycopg.Error as exc:
                raise _MemberError(len(opened), exc) from exc
        members = [
            Member(group.pod(i), host, port, session)
            for i, ((host, port), session) in enumerate(zip(hosts, opened, strict=True))
        ]
        readiness = ensure_streaming(
            members[0],
            members[1:],
            ReplicationCredentials(
                REPLICATION_USER, _secret(request, SECRET_REPLICATION_PASSWORD_KEY)
            ),
            synchronous=request.durability == "strict",
        )
        version = str(opened[0].query("SELECT current_setting('server_version') AS v")[0]["v"])
    except _MemberError as exc:
        return _refused(request, endpoint, exc.cause, exc.ordinal)
    except psycopg.Error as exc:
        return _refused(request, endpoint, exc)
    finally:
        for session in opened:
            session.close()
    return _seen(request, endpoint, readiness, version)


def _seen(
    request: TopologyRequest, endpoint: str, readiness: ReplicationReadiness, version: str
) -> TargetSeen:
    if readiness.failure:
        failure = (readiness.reason, f"target {request.target_name}: {readiness.failure}")
        return TargetSeen(request.target_name, False, *failure, endpoint, version, failure=failure)
    reason, detail = _reason(readiness.reason)
    message = "; ".join(part for part in (detail, readiness.message) if part)
    return TargetSeen(request.target_name, readiness.ready, reason, message, endpoint, version)


def _reason(text: str) -> tuple[str, str]:
    """Condition reasons are CamelCase words; counts such as ``2/3`` go to the message."""
    reason, _, detail = text.partition(" ")
    return reason, detail


def set_up_mongodb(request: TopologyRequest, endpoint: str) -> TargetSeen:
    creds = MongoCredentials(
        username=_secret(request, SECRET_USERNAME_KEY),
        password=_secret(request, SECRET_PASSWORD_KEY),
        keyfile=_secret(request, SECRET_KEYFILE_KEY),
    )
    try:
        result = set_up_mongodb_target(request, creds)
    except CommandFailedError as exc:
        # e.g. authentication refused: retried next pass, explained meanwhile.
        return _refused(request, endpoint, exc)
    except ShardKeyMismatchError as exc:
        # Waiting cannot fix it, and results on another key would not compare.
        failure = ("ShardKeyMismatch", f"target {request.target_name}: {exc}")
        return TargetSeen(request.target_name, False, *failure, endpoint, failure=failure)
    if result.reason == "WaitingForDatabase":  # no answer (UnreachableError)
        refusal = refusals.unreachable(result.message, logs=_logs(request))
        return TargetSeen(request.target_name, False, refusal.reason, refusal.message, endpoint)
    reason, detail = _reason(result.reason)
    message = "; ".join(part for part in (detail, result.message) if part)
    return TargetSeen(
        request.target_name, result.ready, reason, message, endpoint, shard_key=result.shard_key
    )


def set_up(request: TopologyRequest, endpoint: str) -> TargetSeen:
    if request.engine in ("mysql", "mariadb"):
        return set_up_mysql(request, endpoint)
    if request.engine == "postgresql":
        return set_up_postgresql(request, endpoint)
    return set_up_mongodb(request, endpoint)


def verify_external(run: RunRef, index: int, target: Target, ref: SecretKeyRef) -> TargetSeen:
    """An external target: deploy nothing; check it answers and is what the spec says."""
    field = f"spec.targets[{index}].external.uriSecretRef"
    uri = api.read_secret_key(run.namespace, ref.name, ref.key)
    if uri is None:
        message = f"{field}: Secret {ref.name} with key {ref.key} not found in {run.namespace}"
        return TargetSeen(target.name, False, "SecretNotFound", message)
    try:
        found = external.probe(uri.decode())
    except Exception as exc:  # noqa: BLE001 - any driver error means "not usable yet"
        # Explained from its code only: driver messages can echo the URI, credentials included.
        refusal = refusals.explain(target.engine, exc, secret_field=field)
        return TargetSeen(target.name, False, refusal.reason, refusal.message)
    if external.family_of(found.engine) != external.family_of(target.engine):
        message = (
            f"spec.targets[{index}].engine is {target.engine} but the server is {found.engine}"
        )
        return TargetSeen(
            target.name, False, "EngineMismatch", message, found.endpoint,
            failure=("EngineMismatch", message),
        )  # fmt: skip
    if found.topology != target.topology:
        # A MySQL replica server answers as "replica": benchmarking one as the
        # target is as wrong as naming the wrong topology.
        message = (
            f"spec.targets[{index}].topology is {target.topology} but the server is "
            f"{found.topology}; set topology: {found.topology} or point the URI elsewhere"
        )
        return TargetSeen(
            target.name, False, "TopologyMismatch", message, found.endpoint,
            failure=("TopologyMismatch", message),
        )  # fmt: skip
    return TargetSeen(
        target.name, True, "Ready", f"external {found.topology} reachable",
        found.endpoint, found.server_version,
    )  # fmt: skip
