"""The report's Shard distribution: each shard's documents, sizes and chunks at the
end of a sharded target's last step, and documents and chunks per shard over
its storage samples against the records stored.

The result set is a real one (tests/fixtures/result_sets.py); its first target
becomes a sharded MongoDB target with co-located shards, and each of its
steps' storage.csv and summary.json get per-shard figures in the files' own
format (storage.csv's `shards` column, the summary's `storage.shards`), as a
sharded target's runner writes them (tests/unit/runner/test_shard_storage_files.py).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from dbbench_contract.shard_storage import ShardStorage, encode_shards
from dbbench_contract.summary import StepSummary
from dbbench_report import write_report
from dbbench_report.reading import read_run
from dbbench_report.shard_sections import distributions, shard_lines
from tests.fixtures.result_sets import ResultSets
from tests.support.pages import Page, parse

pytestmark = pytest.mark.integration

SHARES = (0.5, 0.3, 0.2)  # an uneven key: shard0 holds half


def shards_of(records: int) -> tuple[ShardStorage, ...]:
    """Three shards holding `records` in SHARES, chunks growing with the data."""
    counts = [int(records * share) for share in SHARES[:2]]
    counts.append(records - sum(counts))
    return tuple(
        ShardStorage(shard=f"shard{i}", documents=n, data_bytes=n * 1000, index_bytes=n * 50,
                     storage_bytes=n * 600, chunks=2 + n // 1000)
        for i, n in enumerate(counts)
    )  # fmt: skip


def with_shards(path: Path) -> list[tuple[float, int]]:
    """storage.csv with a `shards` column at every sample; (epoch, records) of each."""
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert rows, f"{path}: no samples"
    out = io.StringIO()
    writer = csv.DictWriter(out, [*rows[0], "shards"], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, "shards": encode_shards(shards_of(int(row["records"])))})
    path.write_text(out.getvalue())
    return [(float(r["epoch"]), int(r["records"])) for r in rows]


def as_sharded(result_sets: ResultSets, tmp_path: Path) -> tuple[Path, str, str, int]:
    copy = tmp_path / "run"
    shutil.copytree(result_sets.baseline.path, copy)
    run = json.loads((copy / "summary.json").read_text())
    targets = [{k: v for k, v in t.items() if k != "external"} for t in run["spec"]["targets"]]
    name, other = targets[0]["name"], targets[1]["name"]
    targets[0] = {**targets[0], "engine": "mongodb", "topology": "sharded", "shards": 3,
                  "members": 1, "sharding": {"shards": {"placement": "colocated"},
                                             "routers": {"placement": "client"}}}  # fmt: skip
    targets[0].pop("settings", None)
    run["spec"]["targets"] = targets
    (copy / "summary.json").write_text(json.dumps(run))
    samples: list[tuple[float, int]] = []
    for path in sorted(copy.glob(f"{name}/*/*/storage.csv")):
        samples += with_shards(path)
        summary_path = path.parent / "summary.json"
        summary = json.loads(summary_path.read_text())
        records = summary["storage"]["records"]
        summary["storage"]["shards"] = [s.to_wire() for s in shards_of(records)]
        StepSummary.from_wire(summary)  # as the contract reads it
        summary_path.write_text(json.dumps(summary))
    return copy, name, other, max(samples)[1]  # the records at the latest sample


def test_the_end_of_each_shard_is_in_the_table(result_sets: ResultSets, tmp_path: Path) -> None:
    copy, name, other, _ = as_sharded(result_sets, tmp_path)
    page: Page = parse(write_report(copy).read_text())
    assert "shards" in page.sections
    run = read_run(copy)
    last = next(s for s in reversed(run.steps_of(name)) if s.summary.storage is not None)
    assert last.summary.storage is not None
    end = shards_of(last.summary.storage.records)
    for shard, share in zip(end, SHARES, strict=True):
        where = {"target": name, "shard": shard.shard}
        assert page.find("shards", "documents", **where).value == str(shard.documents)
        assert page.find("shards", "chunks", **where).value == str(shard.chunks)
        assert float(page.find("shards", "share", **where).value or 0) == pytest.approx(
            share * 100, abs=0.01
        )
        assert float(page.find("shards", "dataMiB", **where).value or 0) == pytest.approx(
            shard.data_bytes / 2**20
        )
    assert not [c for c in page.cells if c.table == "shards" and c.row.get("target") == other]


def test_documents_and_chunks_per_shard_follow_the_samples(
    result_sets: ResultSets, tmp_path: Path
) -> None:
    copy, name, _, last_records = as_sharded(result_sets, tmp_path)
    page = parse(write_report(copy).read_text())
    assert page.charts[f"shards-documents-{name}"] == 3
    assert page.charts[f"shards-chunks-{name}"] == 3
    (found,) = distributions(read_run(copy))
    lines = {line.label: line for line in shard_lines(found.samples, "documents")}
    assert sorted(lines) == ["shard0", "shard1", "shard2"]
    shard0 = lines["shard0"]
    # Every sample of every step, in time order: x the records stored, y shard0's part.
    assert shard0.x[-1] == last_records
    assert shard0.y == tuple(float(int(x * SHARES[0])) for x in shard0.x)
    chunks = {line.label: line for line in shard_lines(found.samples, "chunks")}
    assert chunks["shard2"].y[-1] == float(shards_of(last_records)[2].chunks or 0)


def test_co_located_shards_are_priced_as_one_node(result_sets: ResultSets, tmp_path: Path) -> None:
    copy, name, _, _ = as_sharded(result_sets, tmp_path)
    page = parse(write_report(copy).read_text())
    pods = {c.value for c in page.cells if c.table == "cost" and c.key == "pods"
            and c.row.get("target") == name}  # fmt: skip
    assert pods == {"1"}
