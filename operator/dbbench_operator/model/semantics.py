"""Checks that need arithmetic or units the CRD's CEL rules cannot do well.

``check(spec)`` is pure and returns every problem; the operator marks a run
with problems Failed, with a condition naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal

from .base import Problem
from .connections import mysql_connections_needed, phase_threads, runner_connections
from .placement import Hardware
from .spec import BenchmarkRunSpec
from .targets import POSTGRES_SETTING_UNITS
from .units import (
    format_bytes,
    format_duration,
    parse_duration,
    parse_mysql_size,
    parse_postgres_size,
    parse_quantity,
)

# PostgreSQL's default max_connections, and the slots it keeps for superusers.
POSTGRES_DEFAULT_MAX_CONNECTIONS = 100
POSTGRES_RESERVED_CONNECTIONS = 3

GIB = 1024**3


def check(spec: BenchmarkRunSpec) -> list[Problem]:
    """All semantic problems of a spec that passed schema and CEL validation."""
    checks: tuple[Callable[[BenchmarkRunSpec], Iterator[Problem]], ...] = (
        _timeout_covers_phases,
        _read_preference_needs_replicas,
        _majority_needs_replicas,
        _cache_settings_fit_memory,
        _postgres_connections_fit,
        _mysql_connections_fit,
        _rate_and_operations_fit_connections,
        _keys_within_records,
        _storage_holds_dataset,
        _cold_cache_needs_exclusive_nodes,
    )
    return [problem for fn in checks for problem in fn(spec)]


def planned_seconds(spec: BenchmarkRunSpec) -> float:
    """Planned time of the duration-based phases over all targets and repeats:
    a lower bound of the run's length (loading and provisioning come on top)."""
    per_target = sum(
        p.measured_seconds * (1 if p.type == "insert" else spec.repeats) for p in spec.phases
    )
    return per_target * len(spec.targets)


def memory_limit(hardware: Hardware) -> Decimal | None:
    """Memory of one database container: limits.memory, else requests.memory."""
    resources = hardware.resources
    if resources is None:
        return None
    for amounts in (resources.limits, resources.requests):
        if amounts and "memory" in amounts:
            return parse_quantity(amounts["memory"])
    return None


def _timeout_covers_phases(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    planned = planned_seconds(spec)
    if planned >= parse_duration(spec.timeout):
        yield Problem(
            "spec.timeout",
            f"timeout {spec.timeout} is not longer than the planned phase time "
            f"{format_duration(planned)} (duration + warmup of each phase x {spec.repeats} "
            f"repeats x {len(spec.targets)} targets, before loading and provisioning); raise "
            "timeout well above it or shorten the phases",
        )


def _replicated(topology: str) -> bool:
    return topology != "standalone"


def _read_preference_needs_replicas(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    standalone = [t.name for t in spec.targets if not _replicated(t.topology)]
    for i, phase in enumerate(spec.phases):
        if phase.read_preference != "primary" and standalone:
            yield Problem(
                f"spec.phases[{i}].readPreference",
                f"readPreference {phase.read_preference} needs replicas but target(s) "
                f"{', '.join(standalone)} are standalone; use primary, or a replicaSet, "
                "sharded or primaryReplica topology",
            )


def _majority_needs_replicas(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    lonely = [
        t.name
        for t in spec.targets
        if t.engine != "mongodb" and not _replicated(t.topology) and t.external is None
    ]
    for i, phase in enumerate(spec.phases):
        if phase.write_concern == "majority" and lonely:
            yield Problem(
                f"spec.phases[{i}].writeConcern",
                f"writeConcern majority waits for a replica (semi-sync, synchronous standby) "
                f"but SQL target(s) {', '.join(lonely)} are standalone; use journaled or "
                "primaryReplica",
            )


# Settings that allocate server memory (effective_cache_size is only a planner
# hint and work_mem is per sort, so neither is checked against the limit).
_POSTGRES_ALLOCATED = ("shared_buffers", "wal_buffers")


def _cache_bytes(engine: str, key: str, value: str) -> Decimal | None:
    """Bytes of a memory-sizing setting, or None when the key is not one."""
    if key == "wiredTigerCacheSizeGB":
        return Decimal(value) * GIB
    if key == "innodb_buffer_pool_size":
        return Decimal(parse_mysql_size(value))
    if engine == "postgresql" and key in POSTGRES_SETTING_UNITS:
        size = Decimal(parse_postgres_size(value, POSTGRES_SETTING_UNITS[key]))
        return size if key in _POSTGRES_ALLOCATED else None
    return None


def _cache_settings_fit_memory(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    for i, target in enumerate(spec.targets):
        limit = memory_limit(spec.hardware_of(target))
        for key, value in (target.settings or {}).items():
            field = f"spec.targets[{i}].settings.{key}"
            try:
                size = _cache_bytes(target.engine, key, value)
            except (ArithmeticError, ValueError):
                postgres = target.engine == "postgresql"
                example = '"512MB" or "2GB"' if postgres else '"2" (GB) or "4G"'
                yield Problem(field, f"{value!r} is not a size; e.g. {example}")
                continue
            if size is not None and limit is not None and size >= limit:
                yield Problem(
                    field,
                    f"{key}={value} ({format_bytes(size)}) does not fit in "
                    f"{spec.hardware_path(i, 'resources')} memory {format_bytes(limit)}: the "
                    "server would be OOM-killed; lower it or raise the memory limit",
                )


def _postgres_connections_fit(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """PostgreSQL refuses logins past max_connections (default 100, 3 kept for superusers):
    every runner connection plus each pod's control connection must fit."""
    threads = max([spec.runner.threads, *(p.threads or 0 for p in spec.phases)])
    wanted = spec.runner.pods * (threads + 1)
    for i, target in enumerate(spec.targets):
        if target.engine != "postgresql" or target.external is not None:
            continue
        text = (target.settings or {}).get("max_connections", "")
        allowed = int(text) if text.isdigit() else POSTGRES_DEFAULT_MAX_CONNECTIONS
        if wanted > allowed - POSTGRES_RESERVED_CONNECTIONS:
            yield Problem(
                f"spec.targets[{i}].settings.max_connections",
                f"the runner opens {wanted} connections (runner.pods x (threads + 1)) but "
                f"postgresql allows {allowed - POSTGRES_RESERVED_CONNECTIONS} "
                f"(max_connections {allowed} minus {POSTGRES_RESERVED_CONNECTIONS} reserved); "
                f'set settings.max_connections to at least "{wanted + 10}" or use fewer threads',
            )


def _mysql_connections_fit(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """MySQL and MariaDB refuse logins past max_connections: a setting below what the
    run opens would fail its steps at run time (unset, the operator sizes it)."""
    for i, target in enumerate(spec.targets):
        if target.engine not in ("mysql", "mariadb") or target.external is not None:
            continue
        text = (target.settings or {}).get("max_connections", "")
        needed = mysql_connections_needed(spec, target)
        if text.isdigit() and int(text) < needed:
            yield Problem(
                f"spec.targets[{i}].settings.max_connections",
                f"max_connections {text} is below the {needed} connections the run needs "
                f"({runner_connections(spec)} of the runner: runner.pods {spec.runner.pods} x "
                f"(threads {phase_threads(spec)} + 1 control), the operator's, each replica's "
                f'and 10 spare); set settings.max_connections to at least "{needed}", leave '
                "it out (the operator sizes it) or use fewer threads",
            )


def _rate_and_operations_fit_connections(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    for i, phase in enumerate(spec.phases):
        connections = spec.runner.pods * (phase.threads or spec.runner.threads)
        if 0 < phase.target_rate < connections:
            yield Problem(
                f"spec.phases[{i}].targetRate",
                f"targetRate {phase.target_rate}/s is below the {connections} connections "
                "(runner.pods x threads): each would wait over a second between operations; "
                "lower threads/pods or raise targetRate",
            )
        if phase.operations is not None and phase.operations < connections:
            yield Problem(
                f"spec.phases[{i}].operations",
                f"operations {phase.operations} is fewer than the {connections} connections "
                "(runner.pods x threads): some would do nothing; lower threads/pods",
            )


def _keys_within_records(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    for i, phase in enumerate(spec.phases):
        if phase.keys is not None and phase.keys > spec.dataset.records:
            yield Problem(
                f"spec.phases[{i}].keys",
                f"keys {phase.keys} exceeds dataset.records {spec.dataset.records}: there are "
                "not that many distinct keys; lower keys",
            )


def _storage_holds_dataset(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """Each deployed target's data volume (its own storage or the run's) holds its
    share of the data; one problem per storage field, for the target needing most."""
    inserted = sum(p.operations or spec.dataset.records for p in spec.phases if p.type == "insert")
    records = max(spec.dataset.records, inserted)
    record_bytes = spec.dataset.approximate_record_bytes
    short: dict[str, tuple[Decimal, str]] = {}
    for i, target in enumerate(spec.targets):
        if target.external is not None:
            continue
        # Sharded targets spread the data over their shards.
        needed = Decimal(records * record_bytes) / (target.shards or 1)
        size = spec.hardware_of(target).storage.size
        field = spec.hardware_path(i, "storage") + ".size"
        if needed > parse_quantity(size) and needed > short.get(field, (Decimal(0), ""))[0]:
            short[field] = (needed, str(size))
    for field, (needed, size) in short.items():
        yield Problem(
            field,
            f"the data alone is about {format_bytes(needed)} per data volume ({records} records "
            f"x {record_bytes} bytes, before indexes) but storage.size is {size}; raise "
            "storage.size",
        )


def _cold_cache_needs_exclusive_nodes(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    if spec.cache == "cold" and not spec.hardware.exclusive:
        yield Problem(
            "spec.hardware.exclusive",
            "cache: cold drops the nodes' page cache, which disturbs anything else running "
            "there; set hardware.exclusive: true",
        )
