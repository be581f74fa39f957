"""Reading dataset.source's files (dbbench_runner.sources): the split across
connections, the rows as records, and bad input named by file and line."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from dbbench_runner.config import StepConfig, parse_config
from dbbench_runner.datasets import generator_for
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.operations import Insert, Operation, Status
from dbbench_runner.sources import SourceError, check_source, refused_row, source_rows
from dbbench_runner.workloads.insert import insert_operations
from tests.support.inspection_files import (
    SEED,
    VEHICLE_OFFSET,
    mapping,
    numbers,
    write_csv,
    write_jsonl,
)

TARGET = {"name": "db", "engine": "mysql", "host": "127.0.0.1", "port": 3306}


def config(
    root: Path, files: list[str], records: int, *, pods: int = 1, pod: int = 0, threads: int = 1,
    **source: Any,
) -> StepConfig:  # fmt: skip
    if ".jsonl" in files[0]:
        mapped = {"format": "jsonl", **mapping()}
        mapped["fields"] = {**mapped["fields"], "Items": "items"}
    else:
        mapped = {"format": "csv", **mapping(empty=["Items"])}
    raw = {
        "target": TARGET,
        "dataset": {
            "shape": "vehicle", "records": records, "seed": SEED, "sourceRoot": str(root),
            "source": {"claimName": "mot", "files": files, **mapped, **source},
        },
        "phase": {"name": "load", "type": "insert", "batchSize": 4},
        "pod": {"index": pod, "count": pods},
        "threads": threads,
    }  # fmt: skip
    return parse_config(raw)


def loaded(cfg: StepConfig, worker: int) -> list[tuple[str, int, dict[str, Any]]]:
    dataset = generator_for(cfg.dataset)
    return [(r.file, r.line, r.record) for r in source_rows(cfg, dataset, worker)]


def bad(cfg: StepConfig, worker: int = 0) -> str:
    """The message of the first bad input: checked before the load, or found loading."""

    def load() -> None:
        check_source(cfg, generator_for(cfg.dataset))
        loaded(cfg, worker)

    with pytest.raises(SourceError) as caught:
        load()
    return str(caught.value)


def test_connections_split_the_rows_without_overlap_and_load_every_one(tmp_path: Path) -> None:
    write_csv(tmp_path / "a.csv", 50)
    write_csv(tmp_path / "b.csv.gz", 50, seed=SEED)  # same rows: keys 1..50 again
    (tmp_path / "b.csv.gz").unlink()
    write_csv(tmp_path / "b.csv", 0)
    cfg = config(tmp_path, ["a.csv", "b.csv"], 50, pods=2, threads=3)
    seen: dict[int, int] = {}
    for pod in (0, 1):
        pod_cfg = cfg.model_copy(update={"pod": cfg.pod.model_copy(update={"index": pod})})
        for thread in range(3):
            worker = pod * 3 + thread
            for _, line, record in loaded(pod_cfg, worker):
                assert record["TestID"] not in seen
                seen[int(str(record["TestID"]))] = worker
                # Row i (0-based, line i + 2 after the header) goes to connection i mod 6.
                assert (line - 2) % 6 == worker
    assert sorted(seen) == list(range(1, 51))


def test_records_are_the_shapes_own_with_the_files_values(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "t.jsonl.gz", 30)
    cfg = config(tmp_path, ["t.jsonl.gz"], 30)
    vehicle = Vehicle(SEED)
    rows = loaded(cfg, 0)
    assert [r[2]["TestID"] for r in rows] == numbers(30)
    assert [r[1] for r in rows] == list(range(1, 31))
    for _, _, record in rows:
        expected = vehicle.record(int(str(record["TestID"])))  # items' Text/Section too
        expected["VehicleID"] = int(str(expected["VehicleID"])) + VEHICLE_OFFSET
        assert record == expected


def test_csv_rows_start_on_their_own_line_and_blank_lines_are_no_rows(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "t.csv", 5)
    lines = [f"{line},x" for line in path.read_text().splitlines()]
    lines[0] = lines[0].removesuffix(",x") + ",note"  # a column no field maps
    # A quoted value spanning two lines, and blank lines: line numbers stay physical.
    lines[1] = lines[1].removesuffix(",x") + ',"two\nlines"'
    path.write_text("\n".join([lines[0], lines[1], "", *lines[2:4], "", lines[4], "x"]))
    message = bad(config(tmp_path, ["t.csv"], 5))
    assert message.startswith("dataset.source: t.csv line 9: 1 values; the header has 15"), message


@pytest.mark.parametrize(
    ("line", "column", "value", "expected"),
    [
        (3, 2, "yesterday", "TestDate (column test_date): 'yesterday' is not an integer"),
        (4, 0, "0", "key test_id = 0: not a record number 1..20"),
        (5, 0, "21", "key test_id = 21: not a record number 1..20"),
        (
            6,
            3,
            "444",
            "TestClass (column test_class_id): 3 characters; the shape's column holds at most 2",
        ),
        (7, 3, "9", "TestClass '9' is not a name in the vehicle shape's test_class lookup table"),
        (8, 8, "BMW", "is not the make of Model"),
        (9, 9, "FOCUS", "Model 'FOCUS' is not a name in the vehicle shape's model lookup table"),
    ],
)
def test_a_value_that_does_not_load_names_its_file_line_and_field(
    tmp_path: Path, line: int, column: int, value: str, expected: str
) -> None:
    path = write_csv(tmp_path / "t.csv", 20)
    lines = path.read_text().splitlines()
    values = lines[line - 1].split(",")
    if value == "BMW" and values[8] == "BMW":
        value = "FORD"
    values[column] = value
    lines[line - 1] = ",".join(values)
    path.write_text("\n".join(lines) + "\n")
    message = bad(config(tmp_path, ["t.csv"], 20))
    assert message.startswith(f"dataset.source: t.csv line {line}: "), message
    assert expected in message


def test_json_lines_faults(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", 6)
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-1]  # not JSON
    path.write_text("\n".join(lines) + "\n")
    assert "t.jsonl line 2: not a JSON object" in bad(config(tmp_path, ["t.jsonl"], 6))
    document = json.loads(lines[0])
    document["items"] = [{"RfrID": 3, "Type": "FAIL"}]
    del document["colour"]
    for broken, expected in (
        ({**document, "colour": "RED"}, "Items (column items): item 0: an item is {RfrID, Type"),
        (document, "field colour is absent"),
        ({**document, "colour": None}, "field colour is null"),
    ):
        path.write_text(json.dumps(broken) + "\n")
        assert f"t.jsonl line 1: {expected}" in bad(config(tmp_path, ["t.jsonl"], 6))


def test_a_count_other_than_records_fails_naming_the_count(tmp_path: Path) -> None:
    write_csv(tmp_path / "t.csv", 20)
    message = bad(config(tmp_path, ["t.csv"], 25))
    assert message == (
        "dataset.source: claim mot: the files hold 20 records, dataset.records is 25: "
        "set dataset.records: 20"
    )


def test_missing_files_and_headers_fail_before_anything_loads(tmp_path: Path) -> None:
    write_csv(tmp_path / "a.csv", 3)
    assert bad(config(tmp_path, ["a.csv", "b.csv"], 3)) == (
        "dataset.source: b.csv: no such file on the claim mot"
    )
    assert "mot/*.csv: no file matches the pattern" in bad(config(tmp_path, ["mot/*.csv"], 3))
    (tmp_path / "a.csv").write_text("test_id,vehicle_id\n1,2\n")
    message = bad(config(tmp_path, ["a.csv"], 3))
    assert message.startswith("dataset.source: a.csv line 1: the header has no column test_date")


def test_gzip_faults_are_named(tmp_path: Path) -> None:
    whole = write_csv(tmp_path / "t.csv.gz", 400).read_bytes()
    (tmp_path / "t.csv.gz").write_bytes(whole[: len(whole) // 2])
    assert "a truncated file" in bad(config(tmp_path, ["t.csv.gz"], 400))
    write_csv(tmp_path / "plain.gz", 3)  # the name says gzip, the content is not
    (tmp_path / "plain.gz").write_bytes(gzip.decompress((tmp_path / "plain.gz").read_bytes()))
    message = bad(config(tmp_path, ["plain.gz"], 3))
    assert "not a valid gzip file" in message
    assert "compression: none" in message


def test_patterns_stand_for_their_matches_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "mot").mkdir()
    for name, count in (("b.csv", 0), ("a.csv", 10)):
        write_csv(tmp_path / "mot" / name, count)
    rows = loaded(config(tmp_path, ["mot/*.csv"], 10), 0)
    assert {r[0] for r in rows} == {"mot/a.csv"}
    assert len(rows) == 10


def test_batches_carry_their_rows_file_and_line(tmp_path: Path) -> None:
    write_csv(tmp_path / "t.csv", 10)
    cfg = config(tmp_path, ["t.csv"], 10)
    batches = list(insert_operations(cfg, generator_for(cfg.dataset), 0))
    assert [len(b.records) for b in batches if isinstance(b, Insert)] == [4, 4, 2]
    first = batches[0]
    assert isinstance(first, Insert)
    assert first.origins == tuple(("t.csv", line) for line in range(2, 6))
    assert first.last_number == max(numbers(10)[:4])


def test_a_refused_batch_is_narrowed_to_the_refused_row() -> None:
    records: tuple[dict[str, object], ...] = tuple({"TestID": n} for n in (5, 6, 7))
    insert = Insert(records, 7, origins=(("t.csv", 2), ("t.csv", 3), ("t.csv", 4)))
    stored = {5}  # key 6 is stored already: the batch failed on it, whole

    def execute(operation: Operation) -> Status:
        assert isinstance(operation, Insert)
        key = operation.records[0]["TestID"]
        if key in stored and key != 5:
            return Status.failed("IntegrityError(1062)")
        stored.add(int(str(key)))
        return Status(ok=True, rows=1)

    stored.add(6)
    error = refused_row(execute, insert, Status.failed("IntegrityError(1062)"))
    assert str(error) == (
        "dataset.source: t.csv line 3: key TestID 6 is already loaded: the key column holds "
        "it twice (the database refused this row: IntegrityError(1062))"
    )
    # MongoDB names the refused record of an unordered batch: no retries needed but it.
    error = refused_row(execute, insert, Status(ok=False, rows=2, error="X", index=1))
    assert error.line == 3


def test_news_tags_and_indexed4_dates_convert_as_their_columns(tmp_path: Path) -> None:
    news = [{"id": n, "title": f"title {n}", "cat": n % 3, "at": 1_262_304_000 + n, "user": 9,
             "tags": [f"t{n}", "x"], "src": "s", "url": "https://e/", "status": 1}
            for n in (2, 1)]  # fmt: skip
    (tmp_path / "news.jsonl").write_text("".join(json.dumps(d) + "\n" for d in news))
    fields = {"Title": "title", "CategoryID": "cat", "CreateTime": "at", "UserID": "user",
              "Tags": "tags", "Source": "src", "SourceUrl": "url", "Status": "status"}  # fmt: skip
    raw = {"target": TARGET, "phase": {"name": "load", "type": "insert"}, "dataset": {
        "shape": "news", "records": 2, "sourceRoot": str(tmp_path), "source": {
            "claimName": "c", "files": ["news.jsonl"], "format": "jsonl", "key": "id",
            "fields": fields}}}  # fmt: skip
    cfg = parse_config(raw)
    records = [r[2] for r in loaded(cfg, 0)]
    assert records[0] == {"ID": 2, "Title": "title 2", "CategoryID": 2, "CreateTime": 1262304002,
                          "UserID": 9, "Tags": ["t2", "x"], "Source": "s",
                          "SourceUrl": "https://e/", "Status": 1}  # fmt: skip
    news[0]["tags"] = ["a-tag-longer-than-16"]
    (tmp_path / "news.jsonl").write_text("".join(json.dumps(d) + "\n" for d in news))
    assert "news.jsonl line 1: Tags (column tags): 20 characters" in bad(cfg)

    (tmp_path / "i.csv").write_text(
        "n,a,b,when,data\n1,5,6,2010-01-01T00:00:01,xyz\n2,7,8,2010-01-01T01:00:00+01:00,q\n"
    )
    raw["dataset"] = {
        "shape": "indexed4", "records": 2, "recordSize": 256, "sourceRoot": str(tmp_path),
        "source": {"claimName": "c", "files": ["i.csv"], "format": "csv", "key": "n",
                   "fields": {"Number": "a", "Number1": "b", "Date": "when", "Data": "data"}},
    }  # fmt: skip
    dates = [r[2]["Date"] for r in loaded(parse_config(raw), 0)]
    # An offset is converted to UTC, as the shape's naive UTC datetimes.
    assert dates == [dt.datetime(2010, 1, 1, 0, 0, 1), dt.datetime(2010, 1, 1, 0, 0, 0)]
