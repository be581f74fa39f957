"""The report's sections, each a pure function of the Run returning HTML."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from pydantic import BaseModel

from dbbench_contract.defaults import REPORT_EVERY
from dbbench_contract.environment import Environment
from dbbench_contract.summary import StepSummary
from dbbench_report import environment_cells as servers
from dbbench_report import figures as f
from dbbench_report import plots
from dbbench_report.cells import NA, mapping, mib, num, raw, row, table, text
from dbbench_report.reading import Run, Step
from dbbench_report.thread_groups import thread_groups


def section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}" data-section="{key}"><h2>{escape(title)}</h2>{body}</section>'


def chart(key: str, title: str, svg: str, series: int) -> str:
    return (
        f'<figure class="chart" data-chart="{escape(key)}" data-series="{series}">'
        f"<figcaption>{escape(title)}</figcaption>{svg}</figure>"
    )


def grid(parts: list[str]) -> str:
    """The first part (a note) full width, the charts after it two a row on wide screens."""
    return parts[0] + f'<div class="charts">{"".join(parts[1:])}</div>'


def overview(run: Run) -> str:
    meta, spec = run.meta, run.spec
    dataset = spec.dataset
    rows = [
        row([text("run"), text(run.title)]),
        row([text("uid"), text(meta.uid)]),
        row([text("started"), text(meta.started_at)]),
        row([text("completed"), text(meta.completed_at)]),
        row([text("outcome"), text(meta.phase or "Succeeded", "outcome")]),
        row([text("targets"), text(", ".join(run.target_names()))]),
        row([text("phases"), text(", ".join(run.phase_names()))]),
        row([text("data set"), text(
            f"{dataset.shape}: {dataset.records:,} records of "
            f"{dataset.record_size} bytes, seed {dataset.seed}"
        )]),
        row([text("repeats"), text(spec.repeats)]),
        row([text("cache"), text(spec.cache)]),
    ]  # fmt: skip
    if run.missing:
        rows.append(row([text("steps without results"), text(", ".join(run.missing))]))
    return section("overview", "Overview", table("overview", ["", ""], rows))


def _client_cells(summary: StepSummary) -> list[str]:
    cpu, bound = f.client_cpu(summary)
    flag = NA if bound is None else ('<b class="flag">client-bound</b>' if bound else "no")
    return [num("clientCpuPerOpUs", cpu, 1), raw(flag, "clientBound")]


def _not_found(summary: StepSummary) -> int | None:
    """The step's not-found count; None (a dash) when it looks nothing up."""
    looks_up = any(v.found is not None or v.not_found
                   for v in summary.operations_by_type.values())  # fmt: skip
    return summary.not_found if looks_up else None


def throughput(run: Run) -> str:
    headers = ["target", "phase", "repeat", "type", "status", "operations", "errors",
               "not found", "throughput (ops/s)", "records/s", *(f"{f.LATENCY_LABELS[k]} (ms)"
               for k in f.LATENCY_KEYS), "client CPU (µs/op)", "client-bound"]  # fmt: skip
    rows = []
    for step in run.steps:
        s = step.summary
        rows.append(row(
            [text(step.target), text(step.phase), text(step.repeat), text(step.type),
             text(s.status, "status"), num("operations", s.operations),
             num("errors", s.errors), num("notFound", _not_found(s)),
             num("throughput", s.throughput),
             num("recordsPerSecond", s.records_per_second if s.records else None),
             *(num(f"latencyMs.{k}", getattr(s.latency_ms, k), 3) for k in f.LATENCY_KEYS),
             *_client_cells(s)],
            {"target": step.target, "phase": step.phase, "repeat": step.repeat},
        ))  # fmt: skip
    note = (
        "<p>Throughput is operations per second over the measured time (warm-up excluded); "
        "latency percentiles come from the merged HDR histograms of every runner pod. A phase "
        "flagged client-bound was limited by the runner's CPU, not by the database. "
        "<b>Found</b>: reads, scans, updates and queries that found a row or document; "
        "<b>not found</b>: those that found none where the plan says one exists, counted as "
        "errors (a phase reading keys its table does not hold measures nothing).</p>"
    )
    by_type = []
    for step in run.steps:
        groups = step.summary.connection_groups
        for kind, values in sorted(step.summary.operations_by_type.items()):
            by_type.append(row(
                [text(step.target), text(step.phase), text(step.repeat), text(kind),
                 num("groupConnections", groups[kind]) if kind in groups
                 else text("all", "groupConnections"),
                 num("operations", values.operations), num("found", values.found),
                 num("notFound", values.not_found if values.found is not None else None),
                 num("errors", values.errors),
                 num("throughput", values.throughput),
                 *(num(f"latencyMs.{k}", getattr(values.latency_ms, k), 3)
                   for k in f.LATENCY_KEYS)],
                {"target": step.target, "phase": step.phase, "repeat": step.repeat, "op": kind},
            ))  # fmt: skip
    types = table("operations", ["target", "phase", "repeat", "operation",
                                 "connections (thread group)", "operations",
                                 "found", "not found", "errors", "throughput (ops/s)",
                                 *(f"{f.LATENCY_LABELS[k]} (ms)" for k in f.LATENCY_KEYS)],
                  by_type)  # fmt: skip
    return section(
        "throughput",
        "Throughput and latency per target and phase",
        note
        + table("throughput", headers, rows)
        + "<h3>By operation type</h3>"
        + thread_groups(run)
        + types,
    )


def side_by_side(run: Run) -> str:
    targets, phases = run.target_names(), run.phase_names()
    headers = ["phase"] + [f"{t} {what}" for t in targets for what in ("ops/s", "p99 (ms)")]
    rows = [
        row([text(p)] + [cell for t in targets for cell in (
            num(f"throughput.mean.{t}", f.throughput(run, t, p).mean
                if run.steps_of(t, p) else None),
            num(f"latencyMs.p99.mean.{t}", f.latency(run, t, p, "p99").mean
                if run.steps_of(t, p) else None, 3),
        )], {"phase": p})
        for p in phases
    ]  # fmt: skip
    bars = {t: [f.throughput(run, t, p).mean for p in phases] for t in targets}
    svg = plots.bar_chart("Throughput by phase and target (mean over repeats)", phases, bars,
                          ylabel="ops/s")  # fmt: skip
    return section(
        "side-by-side",
        "Targets side by side",
        table("side-by-side", headers, rows)
        + chart("side-by-side", "Throughput by phase and target", svg, len(targets)),
    )


_COLD = (
    "<p>Cache: <b data-key='cache' data-value='cold'>cold</b>. Before each measured phase "
    "the database was restarted and the node's page cache dropped, so the phase started "
    "with an empty engine cache. Disk reads per operation show what that costs: a hot set "
    "that fits the cache is read from disk once and then served from memory (few reads per "
    "operation); a working set larger than the cache keeps reading from disk.</p>"
)
_COLD_ONCE = (
    "<p>Cache: <b data-key='cache' data-value='coldOnce'>coldOnce</b>. Before each "
    "target's first measured phase the database was restarted and the node's page cache "
    "dropped; its later phases and repeats ran on that database without a restart, so each "
    "started with what the ones before it left in the cache (field benchmark 5: restart "
    "once, then run the operations three times).</p>"
)
_WARM = (
    "<p>Cache: <b data-key='cache' data-value='warm'>warm</b>. Phases follow each other on a "
    "running database, so each starts with what the previous phases left in the cache.</p>"
)


def disk_reads(run: Run) -> str:
    """Pages the engine read from disk per measured operation (its own counter)."""
    note = {"cold": _COLD, "coldOnce": _COLD_ONCE}.get(run.spec.cache, _WARM) + (
        "<p><i>Restarted</i>: whether the server had restarted since the target's previous "
        "step ended, by the start time the runner derived from the server's own uptime at "
        "each step (— for a target's first step, or a server that does not say).</p>"
        "<p>Disk reads are the engine's count of pages read into its cache during the "
        "measured part of each phase (MySQL/MariaDB <code>Innodb_buffer_pool_reads</code>, "
        "MongoDB WiredTiger <code>pages read into cache</code>, PostgreSQL "
        "<code>blks_read</code>), sampled once on the server "
        "for all runner pods, divided by the phase's operations. Reads served by replicas "
        "are not counted; mongos and FerretDB have no such counter.</p>"
    )
    rows = []
    restarts = f.restarted(run)
    for index, step in enumerate(run.steps):
        found = f.disk_reads(step.summary)
        was = restarts[index]
        rows.append(row(
            [text(step.target), text(step.phase), text(step.repeat),
             text(None if was is None else ("yes" if was else "no"), "restarted"),
             num("operations", step.summary.operations),
             num("diskReads", found.reads if found else None),
             num("diskReadsPerOperation", found.per_operation if found else None, 3),
             text(found.counter if found else None, "counter")],
            {"target": step.target, "phase": step.phase, "repeat": step.repeat},
        ))  # fmt: skip
    headers = ["target", "phase", "repeat", "restarted", "operations", "disk reads",
               "disk reads / operation", "counter"]  # fmt: skip
    body = note + table("disk-reads", headers, rows)
    targets, phases = run.target_names(), run.phase_names()
    spreads = {t: [f.disk_reads_per_operation(run, t, p) for p in phases] for t in targets}
    if any(spread.n for values in spreads.values() for spread in values):
        bars = {t: [spread.mean for spread in values] for t, values in spreads.items()}
        title = "Disk reads per operation by phase and target (mean over repeats)"
        svg = plots.bar_chart(title, phases, bars, ylabel="pages read / operation")
        body += chart("disk-reads", title, svg, len(targets))
    return section("disk-reads", "Cache and disk reads", body)


def stability(run: Run) -> str:
    parts = [
        "<p>Rate over each window of <code>reportEvery</code> records (insert phases) or "
        "operations (the others), against the work "
        "done so far (records inserted for insert phases): flat lines are stable; dips show "
        "flushes, checkpoints or an index outgrowing memory.</p>"
    ]
    for phase in run.phase_names():
        lines = f.stability_lines(run, phase)
        if not lines:
            continue
        # The runner's own (the step file's) window, as the series were cut.
        every = next((s.summary.report_every for s in run.steps_of(phase=phase)), REPORT_EVERY)
        insert = f.inserts(run, phase)
        unit = "records" if insert else "operations"
        title = f"Stability: {phase} ({unit}/s per window of {every:,} {unit})"
        svg = plots.line_chart(
            title, lines, xlabel=f"{unit} {'inserted' if insert else 'done'}", ylabel=f"{unit}/s"
        )
        parts.append(chart(f"stability-{phase}", title, svg, len(lines)))
    return section("stability", "Stability", grid(parts))


def latency_over_time(run: Run) -> str:
    parts = ["<p>Mean latency of each wall-clock second over all operation types.</p>"]
    for phase in run.phase_names():
        lines = f.latency_lines(run, phase)
        if not lines:
            continue
        title = f"Latency over time: {phase}"
        svg = plots.line_chart(title, lines, xlabel="seconds since start", ylabel="mean (ms)")
        parts.append(chart(f"latency-{phase}", title, svg, len(lines)))
    return section("latency", "Mean latency over time", grid(parts))


def storage(run: Run) -> str:
    lines = [line for t in run.target_names() for line in f.storage_lines(run, t)]
    rows = []
    for target in run.target_names():
        last = f.last_storage(run, target)
        rows.append(row(
            [text(target), num("records", None if last is None else last.records),
             num("dataMiB", mib(None if last is None else last.data_bytes), 2),
             num("indexMiB", mib(None if last is None else last.index_bytes), 2),
             num("storageMiB", mib(None if last is None else last.storage_bytes), 2)],
            {"target": target},
        ))  # fmt: skip
    title = "Storage growth: data, index and on-disk size vs records"
    body = table("storage", ["target", "records", "data (MiB)", "index (MiB)", "on disk (MiB)"],
                 rows)  # fmt: skip
    if lines:
        svg = plots.line_chart(title, lines, xlabel="records", ylabel="MiB", marker=True)
        body += chart("storage", title, svg, len(lines))
    return section("storage", "Storage growth", body)


def repeats(run: Run) -> str:
    headers = ["target", "phase", "repeats", "mean ops/s", "min", "max", "stdev", "spread (%)",
               "mean p99 (ms)"]  # fmt: skip
    rows = []
    for target in run.target_names():
        for phase in run.phase_names():
            tp = f.throughput(run, target, phase)
            if tp.n == 0:
                continue
            rows.append(row(
                [text(target), text(phase), num("repeats", tp.n), num("mean", tp.mean),
                 num("min", tp.low), num("max", tp.high), num("stdev", tp.stdev),
                 num("spreadPercent", tp.spread_percent),
                 num("p99.mean", f.latency(run, target, phase, "p99").mean, 3)],
                {"target": target, "phase": phase},
            ))  # fmt: skip
    note = (
        "<p>Each non-insert phase runs <code>repeats</code> times back to back; spread is "
        "(max - min) / mean of the repeats' throughput.</p>"
    )
    return section("repeats", "Repeats: mean and spread", note + table("repeats", headers, rows))


def cost(run: Run) -> str:
    """Cost per million operations per target and phase, each target at its own
    price and pod count (targets may run on different hardware)."""
    prices = {target: f.price_per_hour(run, target) for target in run.target_names()}
    if all(price is None for price in prices.values()):
        return section("cost", "Cost", "<p>Not computed: set <code>hardware.pricePerHour</code> "
                       "(the run's, or a target's own).</p>")  # fmt: skip
    rows = []
    for target, price in prices.items():
        pods = f.database_pods(f.target_spec(run, target))
        for phase in run.phase_names():
            if not run.steps_of(target, phase):
                continue
            mean = f.throughput(run, target, phase).mean
            per_million = None if price is None else f.cost_per_million(price, pods, mean)
            rows.append(row(
                [text(target), text(phase), num("pricePerHour", price, 4), num("pods", pods),
                 num("hourly", None if price is None else price * pods, 4),
                 num("throughput.mean", mean), num("costPerMillion", per_million, 4)],
                {"target": target, "phase": phase},
            ))  # fmt: skip
    note = (
        "<p>Each target at its own price per database pod and hour (its "
        "<code>hardware.pricePerHour</code>, else the run's). Cost per million operations = "
        "price &times; pods &times; 10<sup>6</sup> / (ops/s &times; 3600); "
        "config servers and mongos are not counted; co-located shards (one node) count once.</p>"
    )
    headers = ["target", "phase", "price per pod-hour", "database pods", "price per hour",
               "mean ops/s", "cost per million ops"]  # fmt: skip
    return section("cost", "Cost", note + table("cost", headers, rows))


def _client(client: Mapping[str, str]) -> str:
    if not client:
        return NA
    implementation = client.get("implementation")
    name = f"{client.get('driver', '?')} {client.get('version', '')}".strip()
    named = f"{name} ({implementation})" if implementation else name
    # runner.statements as the SQL drivers ran it (absent on MongoDB and in older results).
    statements = client.get("statements")
    return f"{named}, {statements} statements" if statements else named


def _database_nodes(env: Environment | None) -> str:
    host = None if env is None else env.database
    if host is None or not host.pods:
        return NA
    return ", ".join(f"{p.name}: {p.node or '?'}" for p in host.pods)


def _wire(model: BaseModel | None) -> dict[str, Any]:
    """A part of the spec as the manifest writes it (what the cells show)."""
    return {} if model is None else model.model_dump(by_alias=True, exclude_none=True)


def _environment_cells(run: Run, target: str) -> dict[str, str]:
    spec = f.target_spec(run, target)
    steps: list[Step] = run.steps_of(target)
    env = steps[-1].environment if steps else None
    summary = steps[-1].summary if steps else None
    hardware = f.hardware(run, target)
    external = spec is not None and spec.external is not None
    topology = "external" if external else (spec.topology if spec else "standalone")
    sharded = topology == "sharded"
    server = env.server if env is not None else None
    version = (server.version if server else "") or (summary.server_version if summary else NA)
    return {
        "engine": escape(spec.engine if spec else NA),
        "server version": escape(version),
        "topology": escape(str(topology)),
        "durability": escape(spec.durability if spec else "safe"),
        # The servers that hold the data (a sharded target's shards, never its
        # config servers or routers, which have their own row).
        "settings in force": servers.settings(env),
        "engine cache (MiB)": servers.cache(env),
        "database memory limit (MiB)": servers.memory(env),
        "data-to-cache ratio": servers.data_ratio(env, "data_to_cache_ratio"),
        "data-to-memory ratio": servers.data_ratio(env, "data_to_memory_ratio"),
        "config servers and routers": servers.metadata_servers(env),
        "cache state": escape(run.spec.cache),
        "database node": escape(_database_nodes(env)),
        "runner node": escape(str((env.pod.node or env.pod.hostname) if env else NA)),
        "node labels": mapping(hardware.node_selector),
        "resources": mapping({
            k: ", ".join(f"{n}={q}" for n, q in sorted(v.items()))
            for k, v in _wire(hardware.resources).items()
        }),
        "storage": mapping(None if external else _wire(hardware.storage)),
        "price per pod-hour": escape(str(NA if hardware.price_per_hour is None
                                         else hardware.price_per_hour)),
        "runner pods x threads": escape(
            f"{summary.pod_count} x {summary.threads}" if summary else NA
        ),
        "runner processes": escape(str(env.pod.processes) if env else NA),
        "client library": escape(_client(env.runner.client) if env else NA),
        "runner image": escape(str((env.runner.image if env else None) or NA)),
        "shard key": escape(f"{(spec and spec.shard_key) or '_id'} (hashed)" if sharded else NA),
    }  # fmt: skip


def environment(run: Run) -> str:
    targets = run.target_names()
    cells = {t: _environment_cells(run, t) for t in targets}
    fields = list(next(iter(cells.values()))) if cells else []
    rows = [
        row([text(field)] + [raw(cells[t][field], t) for t in targets], {"field": field})
        for field in fields
    ]
    return section("environment", "Environment", table("environment", ["", *targets], rows))
