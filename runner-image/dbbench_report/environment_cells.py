"""The environment table's server cells (pure, HTML): the servers that hold the data.

A sharded MongoDB target's settings, cache, memory and ratios are its shards'
(environment.json's server.shards, read on each shard's own mongod): one line
for the shards that agree, one line per shard where they differ. Its config
servers and routers hold no data and are listed on their own line, under
their roles, never counted in the memory or the ratios.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from dbbench_contract.environment import Environment, ShardServer
from dbbench_contract.step import CONFIG_SERVER_ROLE, ROUTER_ROLE, DatabasePod
from dbbench_report.cells import NA, mapping, mib

ROLE_NAMES = {CONFIG_SERVER_ROLE: "config server", ROUTER_ROLE: "router (mongos)"}


def ratio(value: float | None) -> str:
    return NA if value is None else f"{value:.3f}"


def megabytes(value: int | None) -> str:
    return NA if value is None else f"{mib(value):,.0f}"


def per_shard(shards: Sequence[ShardServer], value: Callable[[ShardServer], str]) -> list[str]:
    """'shard0, shard1: value' lines, one per distinct value (one when all agree);
    a shard the runner could not read says so."""
    groups: dict[str, list[str]] = {}
    for shard in shards:
        shown = f"not read ({shard.error})" if shard.error else value(shard)
        groups.setdefault(shown, []).append(shard.name)
    return [escape(f"{', '.join(names)}: {shown}") for shown, names in groups.items()]


def _lines(first: str, shards: Sequence[ShardServer], value: Callable[[ShardServer], str]) -> str:
    return "<br>".join([escape(first), *per_shard(shards, value)])


def settings(env: Environment | None) -> str:
    """Settings in force; a sharded target's: those every shard shares, then each
    shard's own where they differ."""
    if env is None:
        return mapping(None)
    server = env.server
    if not server.shards:
        return mapping(server.settings)
    lines = [f"every shard: {mapping(server.settings)}" if server.settings else ""]
    for shard in server.shards:
        if shard.error:
            lines.append(escape(f"{shard.name}: not read ({shard.error})"))
            continue
        own = {k: v for k, v in shard.settings.items() if server.settings.get(k) != v}
        if own:
            lines.append(f"{escape(shard.name)}: {mapping(own)}")
    return "<br>".join(line for line in lines if line) or NA


def cache(env: Environment | None) -> str:
    """The engine's cache in MiB (the shards' together, then each shard's)."""
    if env is None:
        return NA
    server = env.server
    total = f"{mib(server.cache_bytes) or 0:,.0f}"
    if not server.shards:
        return escape(total)
    return _lines(f"{total} in all", server.shards, lambda s: megabytes(s.cache_bytes))


def memory(env: Environment | None) -> str:
    """The memory limit of the pods that hold the data (each shard's)."""
    host = None if env is None else env.database
    if env is not None and env.server.shards:
        return "<br>".join(per_shard(env.server.shards, lambda s: megabytes(s.memory_limit_bytes)))
    return escape(NA if host is None else megabytes(host.memory_limit_bytes))


def data_ratio(env: Environment | None, which: str) -> str:
    """`data_to_cache_ratio` or `data_to_memory_ratio`: the target's, then each shard's."""
    if env is None:
        return NA
    value: float | None = getattr(env, which)
    if not env.server.shards:
        return escape(ratio(value))
    return _lines(f"{ratio(value)} in all", env.server.shards, lambda s: ratio(getattr(s, which)))


def _pod(pod: DatabasePod) -> str:
    limits = ", ".join(
        part
        for part in (
            None if pod.memory_limit_bytes is None else f"{megabytes(pod.memory_limit_bytes)} MiB",
            None if pod.cpu_limit is None else f"{pod.cpu_limit:g} CPU",
        )
        if part
    )
    return f"{pod.name} ({limits})" if limits else pod.name


def metadata_servers(env: Environment | None) -> str:
    """A sharded target's config servers and routers, as such, with their own limits
    and the router's settings (it reads the config servers named there)."""
    host = None if env is None else env.database
    pods = () if host is None else host.pods
    lines = [
        escape(f"{label}: {', '.join(_pod(p) for p in pods if p.role == role)}")
        for role, label in ROLE_NAMES.items()
        if any(p.role == role for p in pods)
    ]
    if env is not None and env.server.router:
        lines.append(f"router settings: {mapping(env.server.router)}")
    return "<br>".join(lines) or NA
