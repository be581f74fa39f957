"""Shard distribution: how a sharded target's collection spread over its shards.

Field benchmark 2 ended with each shard's document count, size and chunks;
every storage sample of a sharded MongoDB target has them (storage.csv's
`shards` column, the summary's `storage.shards`). The section shows, per
sharded target, the distribution at the end of its last step (a table) and
over the run (documents and chunks per shard against the records stored).
Pure: the Run in, HTML out; empty when no target has per-shard samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from dbbench_contract.shard_storage import ShardStorage
from dbbench_report import plots
from dbbench_report.cells import mib, num, row, table, text
from dbbench_report.figures import Line
from dbbench_report.reading import Run, StorageSample
from dbbench_report.sections import chart, grid, section

KEY = "shards"
TITLE = "Shard distribution"
HEADERS = ["target", "shard", "documents", "share of documents (%)", "data (MiB)", "index (MiB)",
           "on disk (MiB)", "chunks"]  # fmt: skip


@dataclass(frozen=True)
class Distribution:
    """One sharded target: its samples with shards, in time order, and the end."""

    target: str
    samples: tuple[StorageSample, ...]
    end: tuple[ShardStorage, ...]


def distributions(run: Run) -> list[Distribution]:
    """The targets whose storage samples have per-shard figures."""
    found = []
    for target in run.target_names():
        samples = tuple(sorted(
            (s for step in run.steps_of(target) for s in step.storage if s.shards),
            key=lambda s: s.epoch,
        ))  # fmt: skip
        end = _end(run, target) or (samples[-1].shards if samples else ())
        if samples or end:
            found.append(Distribution(target, samples, end))
    return found


def _end(run: Run, target: str) -> tuple[ShardStorage, ...]:
    """The shards after the target's last step that recorded them (its summary's
    last sample, taken after the phase's last write)."""
    for step in reversed(run.steps_of(target)):
        block = step.summary.storage
        if block is not None and block.shards:
            return block.shards
    return ()


def shard_lines(samples: tuple[StorageSample, ...], figure: str) -> list[Line]:
    """One line per shard: its documents or chunks against the records stored."""
    names = sorted({shard.shard for sample in samples for shard in sample.shards})
    lines = []
    for name in names:
        points = [
            (float(sample.records), _value(shard, figure))
            for sample in samples
            for shard in sample.shards
            if shard.shard == name and _value(shard, figure) is not None
        ]
        if points:
            lines.append(Line(name, tuple(x for x, _ in points),
                              tuple(float(y or 0) for _, y in points)))  # fmt: skip
    return lines


def _value(shard: ShardStorage, figure: str) -> int | None:
    return shard.documents if figure == "documents" else shard.chunks


def _end_row(target: str, shard: ShardStorage, total: int) -> str:
    share = shard.documents / total * 100 if total else None
    cells = [
        text(target), text(shard.shard), num("documents", shard.documents),
        num("share", share, 1), num("dataMiB", mib(shard.data_bytes), 2),
        num("indexMiB", mib(shard.index_bytes), 2),
        num("storageMiB", mib(shard.storage_bytes), 2), num("chunks", shard.chunks),
    ]  # fmt: skip
    return row(cells, {"target": target, "shard": shard.shard})


def _end_rows(found: Distribution) -> list[str]:
    total = sum(s.documents for s in found.end)
    return [_end_row(found.target, shard, total) for shard in found.end]


def section_html(run: Run) -> str:
    found = distributions(run)
    if not found:
        return ""
    note = (
        "<p>Each sharded target's collection per shard, through mongos: documents, data, "
        "index and on-disk size as each shard counts them (<code>$collStats</code>), chunks "
        "as the config servers place them (<code>config.chunks</code>). The table is the "
        "end of the target's last step; the charts follow every storage sample against "
        "the records stored. A share far from 1/shards is an uneven shard key.</p>"
    )
    rows = [line for one in found for line in _end_rows(one)]
    parts = [note + table("shards", HEADERS, rows)]
    for one in found:
        for figure, unit in (("documents", "documents"), ("chunks", "chunks")):
            lines = shard_lines(one.samples, figure)
            if not lines:
                continue
            title = f"{one.target}: {figure} per shard vs records stored"
            svg = plots.line_chart(title, lines, xlabel="records stored", ylabel=unit,
                                   marker=True)  # fmt: skip
            parts.append(chart(f"shards-{figure}-{one.target}", title, svg, len(lines)))
    return section(KEY, TITLE, grid(parts))
