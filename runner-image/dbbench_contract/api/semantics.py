"""Checks that need arithmetic or units the CRD's CEL rules cannot do well.

``check(spec)`` is pure and returns every problem; the operator marks a run
with problems Failed, with a condition naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal

from . import memory_floors as floors
from .base import Problem
from .connections import mysql_connections_needed, phase_threads, runner_connections
from .expectation_checks import operation_problems
from .mix import groups_problem
from .phase_order import growth_problems, keys_problems, phase_runs
from .placement import Hardware, Resources
from .sharding import processes_sharing, sharding_problems
from .spec import BenchmarkRunSpec
from .tables import UnfilledRead, keyed_table, unfilled_reads
from .targets import POSTGRES_SETTING_UNITS, Target
from .units import (
    format_bytes,
    format_duration,
    parse_mysql_size,
    parse_postgres_size,
    parse_quantity,
)

# PostgreSQL's default max_connections, and the slots it keeps for superusers.
POSTGRES_DEFAULT_MAX_CONNECTIONS = 100
POSTGRES_RESERVED_CONNECTIONS = 3

GIB = 1024**3
MIB = 1024**2


def check(spec: BenchmarkRunSpec) -> list[Problem]:
    """All semantic problems of a spec that passed schema and CEL validation."""
    checks: tuple[Callable[[BenchmarkRunSpec], Iterator[Problem]], ...] = (
        _timeout_covers_phases,
        _read_preference_needs_replicas,
        _majority_needs_replicas,
        _cache_settings_fit_memory,
        _memory_floors,
        _postgres_connections_fit,
        _mysql_connections_fit,
        _rate_and_operations_fit_connections,
        _thread_groups_fit_connections,
        keys_problems,
        growth_problems,
        _reads_what_was_loaded,
        _storage_holds_dataset,
        _cold_cache_needs_exclusive_nodes,
        sharding_problems,
        operation_problems,
    )
    return [problem for fn in checks for problem in fn(spec)]


def results_claim_problems(spec: BenchmarkRunSpec, claim: str) -> list[Problem]:
    """One results service owns one claim (the chart's `results.claimName`, given here
    as `claim`): a run cannot choose another."""
    if spec.results.claim_name == claim:
        return []
    return [Problem(
        "spec.results.claimName",
        f"this operator's results service writes to claim {claim!r} (chart "
        f"value results.claimName), not {spec.results.claim_name!r}: leave the field unset or "
        f"set it to {claim!r}",
    )]  # fmt: skip


def planned_seconds(spec: BenchmarkRunSpec) -> float:
    """Planned time of the duration-based phases over all targets and repeats:
    a lower bound of the run's length (loading and provisioning come on top)."""
    per_target = sum(run.phase.measured_seconds for run in phase_runs(spec))
    return per_target * len(spec.targets)


def memory_limit(hardware: Hardware) -> Decimal | None:
    """Memory of one database container: limits.memory, else requests.memory."""
    found = _memory_of(hardware.resources)
    return None if found is None else found[1]


def _memory_of(resources: Resources | None) -> tuple[str, Decimal, str] | None:
    """(limits | requests, bytes, as written) of a resources block's memory."""
    if resources is None:
        return None
    for kind, amounts in (("limits", resources.limits), ("requests", resources.requests)):
        if amounts and "memory" in amounts:
            return kind, parse_quantity(amounts["memory"]), str(amounts["memory"])
    return None


def _timeout_covers_phases(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    planned = planned_seconds(spec)
    if planned >= spec.timeout.seconds:
        yield Problem(
            "spec.timeout",
            f"timeout {spec.timeout} is not longer than the planned phase time "
            f"{format_duration(planned)} (duration + warmup of each phase x {spec.repeats} "
            f"repeats{_growth_factor(spec)} x {len(spec.targets)} targets, before loading and "
            "provisioning); raise "
            "timeout well above it or shorten the phases",
        )


def _growth_factor(spec: BenchmarkRunSpec) -> str:
    grown = [p.growth for p in spec.phases if p.growth is not None]
    return "".join(f" (x {g.steps} growth steps for {', '.join(g.measure)})" for g in grown)


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
        # Co-located shards: each server has its share of the memory (sharding.py).
        ways = processes_sharing(target)
        limit = None if limit is None else limit / ways
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
                    f"{spec.hardware_path(i, 'resources')} memory {format_bytes(limit)}"
                    f"{_share(ways)}: the server would be OOM-killed; lower it or raise the "
                    "memory limit",
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


def _thread_groups_fit_connections(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    for i, phase in enumerate(spec.phases):
        connections = spec.runner.pods * (phase.threads or spec.runner.threads)
        problem = None if phase.mix is None else groups_problem(phase.mix, connections)
        if problem is not None:
            yield Problem(f"spec.phases[{i}].mix.by", problem)


def _reads_what_was_loaded(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """A reading phase whose table nothing loaded would measure an empty table: every
    read finds nothing, and the run would end Succeeded with figures of nothing."""
    for unfilled in unfilled_reads(spec):
        yield Problem(f"spec.phases[{unfilled.index}]", _unfilled_message(spec, unfilled))


def _unfilled_message(spec: BenchmarkRunSpec, unfilled: UnfilledRead) -> str:
    phase, mode = unfilled.phase, unfilled.phase.id_mode
    if unfilled.loaded_before:
        before = f"the insert phases before it load {', '.join(unfilled.loaded_before)} only"
    else:
        before = "no insert phase comes before it"
    ways = []
    other = "server" if mode == "client" else "client"
    other_table = keyed_table(spec.dataset, other)
    # flat45's server-keyed table has no index on the key: reading it is refused anyway.
    if other_table in unfilled.loaded_before and not (
        spec.dataset.shape == "flat45" and other == "server"
    ):
        ways.append(f"set idMode: {other} on this phase to read {other_table}")
    if unfilled.loaded_later is not None:
        ways.append(f"move insert phase {unfilled.loaded_later} before it")
    ways.append(f"add an insert phase with idMode {mode} before it")
    return (
        f"phase {phase.name} ({phase.type}, idMode {mode}) reads {unfilled.table}, which no "
        f"earlier phase of the run loads ({before}); on target(s) "
        f"{', '.join(unfilled.targets)} it would read an empty table and measure nothing: "
        + ", or ".join(ways)
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


def _share(ways: int) -> str:
    return "" if ways == 1 else f" (each of {ways} co-located shard processes' share)"


def _cold_cache_needs_exclusive_nodes(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    if spec.restarts_databases and not spec.hardware.exclusive:
        yield Problem(
            "spec.hardware.exclusive",
            f"cache: {spec.cache} drops the nodes' page cache, which disturbs anything else "
            "running there; set hardware.exclusive: true",
        )


def _floor_settings(
    spec: BenchmarkRunSpec, target: Target, limit: int
) -> tuple[floors.Footprint, int, int, bool, str]:
    """(footprint, cache bytes, connections, performance_schema, what the cache is) of
    a deployed target: its settings, else what the operator computes (the smallest
    it ever computes for InnoDB and WiredTiger: larger ones fit by construction)."""
    fp = floors.footprint(target.engine, bool(target.protocol_stand_in))
    settings = target.settings or {}
    text = settings.get("max_connections", "")
    connections = int(text) if text.isdigit() else fp.default_connections
    ps = False
    if target.engine in ("mysql", "mariadb"):
        if not text.isdigit():  # what the operator sets when the user does not
            connections = max(fp.default_connections, mysql_connections_needed(spec, target))
        ps = floors.performance_schema_on(target.engine, settings.get("performance_schema"))
        pool = settings.get("innodb_buffer_pool_size")
        cache = parse_mysql_size(pool) if pool else floors.INNODB_MIN_POOL
        return fp, cache, connections, ps, "buffer pool"
    if target.engine == "postgresql":
        shared = settings.get("shared_buffers")
        computed = max(floors.MIN_SHARED_BUFFERS, int(limit * floors.SHARED_BUFFERS_SHARE))
        unit = POSTGRES_SETTING_UNITS["shared_buffers"]
        cache = parse_postgres_size(shared, unit) if shared else computed
        return fp, cache, connections, ps, "shared_buffers"
    connections = runner_connections(spec)  # mongod's own limit is far above any run's
    if target.protocol_stand_in:
        return fp, 0, connections, ps, "cache"
    gigabytes = settings.get("wiredTigerCacheSizeGB")
    cache = int(Decimal(gigabytes) * GIB) if gigabytes else floors.MIN_WIRED_TIGER_CACHE
    return fp, cache, connections, ps, "WiredTiger cache"


def _config_server_floor(spec: BenchmarkRunSpec, i: int, target: Target) -> Iterator[Problem]:
    """A sharded target's config servers: mongod with the smallest WiredTiger cache
    (sized from their own memory) and the few connections of mongos and the setup."""
    hardware = spec.hardware_of(target)
    memory = _memory_of(hardware.config_server_resources)
    if target.engine != "mongodb" or target.topology != "sharded" or memory is None:
        return
    kind, limit, written = memory
    fp = floors.FOOTPRINTS["mongodb"]
    needed = floors.floor(fp, floors.MIN_WIRED_TIGER_CACHE, _CONFIG_CONNECTIONS, False)
    if needed > limit:
        yield Problem(
            f"{spec.hardware_path(i, 'config_server_resources')}.{kind}.memory",
            f"{written} is below what a config server ({fp.measured}) needs: about "
            f"{floors.mib(needed)} (mongod {floors.mib(fp.server)}, the smallest WiredTiger "
            f"cache, {floors.mib(floors.MIN_WIRED_TIGER_CACHE)}, {_CONFIG_CONNECTIONS} "
            f"connections): set {kind}.memory to at least {floors.suggested_limit(needed)}",
        )


# mongos routers, the other config servers and the operator's setup.
_CONFIG_CONNECTIONS = 32


def _memory_floors(spec: BenchmarkRunSpec) -> Iterator[Problem]:
    """A deployed server's memory limit holds what it needs at the run's settings
    (model/memory_floors.py): below it, it stalls at the limit or is OOM-killed."""
    for i, target in enumerate(spec.targets):
        if target.external is None:
            yield from _config_server_floor(spec, i, target)
        memory = _memory_of(spec.hardware_of(target).resources)
        if target.external is not None or memory is None:
            continue
        kind, limit, written = memory
        ways = processes_sharing(target)
        if ways > 1:  # co-located shards: each mongod has its share (sharding.py)
            limit, written = limit / ways, f"{written} / {ways}{_share(ways)}"
        try:
            fp, cache, connections, ps, cache_name = _floor_settings(spec, target, int(limit))
        except (ArithmeticError, ValueError):
            continue  # an unreadable size: _cache_settings_fit_memory names it
        needed = floors.floor(fp, cache, connections, ps)
        if needed <= limit or cache >= limit:  # a cache beyond the limit: reported above
            continue
        field = f"{spec.hardware_path(i, 'resources')}.{kind}.memory"
        parts = [f"the server {floors.mib(fp.server)}"]
        if ps:
            parts.append(f"performance_schema {floors.mib(fp.performance_schema)}")
        if cache:
            parts.append(f"a {floors.mib(cache)} {cache_name} and its bookkeeping")
        parts.append(f"{connections} connections x {fp.per_connection / MIB:g} MiB")
        fixes = [f"set {kind}.memory to at least {floors.suggested_limit(needed * ways)}"]
        without = floors.floor(fp, cache, connections, False)
        if ps and without <= limit:
            fixes.append(f'settings.performance_schema: "OFF" (then about {floors.mib(without)})')
        fits = (int(limit) - floors.floor(fp, cache, 0, ps)) // fp.per_connection
        if target.engine != "mongodb" and fits >= runner_connections(spec) + 10:
            fixes.append(f'settings.max_connections: "{fits}"')
        yield Problem(
            field,
            f"{written} is below what {fp.name} needs at target {target.name}'s settings: "
            f"about {floors.mib(needed)} ({fp.measured}: {', '.join(parts)}); below it the "
            f"server stalls at the limit or is OOM-killed: {', or '.join(fixes)}",
        )
