"""The driver contract (YCSB's AbstractDBTestCases): every engine runs these.

A subclass provides `target` (the runner's target config for a fresh, empty
database) and `stored` (every record the database holds, as the generator
would produce it). Runs go through the real runner: worker processes, timing
wrapper, result files.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dbbench_contract.run_summary import not_found_cell, step_result
from dbbench_contract.summary import NOT_FOUND, StepSummary
from dbbench_runner.config import StepConfig
from dbbench_runner.datasets import DatasetGenerator, generator_for
from dbbench_runner.merge import merge
from dbbench_runner.operations import Read, ReadModifyWrite, Update
from dbbench_runner.running import EXIT_ERROR_RATE, run_step
from dbbench_runner.workloads import operation_budget, operations_for
from tests.support.runner_files import check_results
from tests.support.runner_files import step as build_step

SHAPES = ["flat45", "indexed4", "news", "ycsb"]
RECORDS = 240


@dataclass
class SharedLoads:
    """A contract class's loaded databases, by (shape, idMode, records), and how to
    drop them once the class is done (the session's servers still run)."""

    databases: dict[tuple[str, str, int], str] = field(default_factory=dict)
    drops: list[Callable[[], None]] = field(default_factory=list)


class DriverContract:
    """Abstract: subclasses define the fixtures `target`, `insert_variant` and `stored`.

    `settings` are step-file fields beside the target (e.g. mysqlDriver) that a
    subclass sets to run the whole contract once per client library.
    """

    settings: dict[str, Any] = {}  # noqa: RUF012 - replaced per instance, never mutated

    def step(
        self, target: dict[str, Any], shape: str, records: int, phase: dict[str, Any], **extra: Any
    ) -> StepConfig:
        return build_step(target, shape, records, phase, **self.settings, **extra)

    # Paced rate for the warm-up/duration test: one the server sustains with room to spare.
    paced_rate: ClassVar[int] = 100
    # The engine's disk-read counter the runner samples (None: the server has none).
    disk_reads_counter: ClassVar[str | None] = None

    def stored(
        self, target: dict[str, Any], dataset: DatasetGenerator, id_mode: str
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def load(
        self,
        target: dict[str, Any],
        shape: str,
        out: Path,
        *,
        id_mode: str = "client",
        records: int = RECORDS,
    ) -> None:
        config = self.step(
            target, shape, records, {"type": "insert", "idMode": id_mode, "batchSize": 20}
        )
        assert run_step(config, out) == 0

    def drop_database(self, target: dict[str, Any]) -> None:
        """Remove `target`'s database (a shared load's, once its class is done)."""
        raise NotImplementedError

    # Class-scoped, which keeps each contract file on one worker (tests/conftest.py,
    # xdist_group): spread over four, each worker made most of the loads again.
    @pytest.fixture(scope="class")
    @classmethod
    def _shared_loads(cls) -> Iterator[SharedLoads]:
        shared = SharedLoads()
        yield shared
        for drop in shared.drops:
            drop()

    @pytest.fixture
    def loaded(
        self, target: dict[str, Any], _shared_loads: SharedLoads, tmp_path: Path
    ) -> Callable[..., dict[str, Any]]:
        """`loaded(shape, id_mode=, records=)`: a target whose database holds those
        records, loaded once per class by the runner (as `load` does) and shared by
        the tests that only read it: a test that writes loads its own. The target
        is the test's own but for the database: its steps use its client library.

        Each load is a runner step, 0.33 s of CPU (median of 6, in process,
        2026-11-28); 77 contract tests (the mongod class's counted) loaded only to
        read, now 7 loads per class."""

        def get(shape: str, *, id_mode: str = "client", records: int = RECORDS) -> dict[str, Any]:
            key = (shape, id_mode, records)
            database = _shared_loads.databases.get(key)
            if database is None:
                database = f"s_{uuid.uuid4().hex[:12]}"
                shared = {**target, "database": database}
                # Dropped once the class is done (through this test's server); a
                # load that fails is not shared (the next test loads again).
                _shared_loads.drops.append(functools.partial(self.drop_database, shared))
                self.load(shared, shape, tmp_path / "shared-load", id_mode=id_mode,
                          records=records)  # fmt: skip
                _shared_loads.databases[key] = database
            return {**target, "database": database}

        return get

    def expected(self, config: StepConfig, numbers: range) -> list[dict[str, Any]]:
        generator = generator_for(config.dataset)
        return sorted(
            (generator.record(n) for n in numbers), key=lambda r: str(r[generator.key_column])
        )

    @pytest.mark.parametrize("shape", SHAPES)
    @pytest.mark.parametrize("id_mode", ["client", "server"])
    def test_insert_writes_exactly_the_records(
        self,
        target: dict[str, Any],
        insert_variant: dict[str, Any],
        shape: str,
        id_mode: str,
        tmp_path: Path,
    ) -> None:
        phase = {"type": "insert", "idMode": id_mode, "reportEvery": 50, **insert_variant}
        config = self.step(target, shape, RECORDS, phase)
        assert run_step(config, tmp_path) == 0
        batch = insert_variant.get("batchSize", 1)
        # two connections, 120 records each, in batches
        calls = 2 * math.ceil(RECORDS / 2 / batch)
        summary = check_results(tmp_path, operations=calls, records=RECORDS)
        assert summary["errors"] == 0
        if insert_variant.get("writeConcern") == "unacknowledged":
            # The phase ends once the w:0 writes are applied, and says what the server holds.
            assert (summary["storedRecords"], summary["unappliedWrites"]) == (RECORDS, 0)
        else:
            assert summary["storedRecords"] is None
        generator = generator_for(config.dataset, config.phase.id_mode)
        assert self.stored(target, generator, id_mode) == self.expected(
            config, range(1, RECORDS + 1)
        )

    def keyed_by(self, target: dict[str, Any], dataset: DatasetGenerator) -> str:
        """How the records of `dataset.table` are keyed: "record key" (primary key /
        _id is the record's key) or "server" (no declared key / ObjectId _id)."""
        raise NotImplementedError

    def key_indexed(self, target: dict[str, Any], dataset: DatasetGenerator) -> bool:
        """Whether any index of `dataset.table` covers the record's key column."""
        raise NotImplementedError

    @pytest.mark.parametrize("order", [("client", "server"), ("server", "client")])
    def test_both_insert_modes_in_one_run_live_in_their_own_tables(
        self, target: dict[str, Any], order: tuple[str, str], tmp_path: Path
    ) -> None:
        # Field benchmark 1 loads the same records twice, once per idMode: each
        # mode's layout must not depend on which load ran first.
        for mode in order:
            config = self.step(target, "flat45", RECORDS, {"type": "insert", "idMode": mode})
            assert run_step(config, tmp_path / mode) == 0
            summary = check_results(tmp_path / mode, operations=RECORDS, records=RECORDS)
            assert summary["storage"]["records"] == RECORDS  # its own table's count
        layouts = {}
        for mode in order:
            generator = generator_for(config.dataset, mode)  # type: ignore[arg-type]
            assert self.stored(target, generator, mode) == self.expected(
                config, range(1, RECORDS + 1)
            ), mode
            layouts[generator.table] = self.keyed_by(target, generator)
        assert layouts == {"flat45": "record key", "flat45_serverkey": "server"}
        # Benchmark 1's mode d: the server-keyed flat45 has no index on md5 at all.
        server_keyed = generator_for(config.dataset, "server")
        assert not self.key_indexed(target, server_keyed)
        # A reading phase reads the client-keyed table by default.
        reads = self.step(
            target, "flat45", RECORDS, {"type": "pointReads", "keys": 50, "operations": 50}
        )
        assert run_step(reads, tmp_path / "reads") == 0
        read = check_results(tmp_path / "reads", operations=50)
        assert read["operationsByType"]["read"]["rows"] == 50

    @pytest.mark.parametrize("distribution", ["uniform", "zipfian", "latest", "hotspot"])
    def test_mix_reads_inserts_updates_scans(
        self, target: dict[str, Any], distribution: str, tmp_path: Path
    ) -> None:
        self.load(target, "ycsb", tmp_path / "load")
        phase = {
            "type": "mix",
            "mix": {"read": 40, "insert": 20, "update": 30, "scan": 10},
            "distribution": {
                "type": distribution,
                **({"dataFraction": 0.1} if distribution == "hotspot" else {}),
            },
            "operations": 400,
            "reportEvery": 100,
        }
        config = self.step(target, "ycsb", RECORDS, phase, tuning={"scanLength": 10})
        assert run_step(config, tmp_path / "mix") == 0
        summary = check_results(tmp_path / "mix", operations=400)
        by_type = summary["operationsByType"]
        assert summary["errors"] == 0
        assert set(by_type) == {"read", "insert", "update", "scan"}
        assert by_type["read"]["rows"] == by_type["read"]["operations"]  # every key read exists
        assert by_type["scan"]["rows"] > 0
        # Every lookup found what the plan says is there; inserts look nothing up.
        for kind in ("read", "update", "scan"):
            assert by_type[kind]["operations"] > 0, kind
            assert (by_type[kind]["found"], by_type[kind]["notFound"]) == (
                by_type[kind]["operations"], 0), kind  # fmt: skip
        assert (by_type["insert"]["found"], summary["notFound"]) == (None, 0)
        inserted = summary["records"]
        assert inserted == by_type["insert"]["operations"]
        assert summary["writesRecords"] is True  # a mix with an insert share
        stored = self.stored(target, generator_for(config.dataset), "client")
        assert len(stored) == RECORDS + inserted
        # the loaded records are all still there, and new ones are numbered past them
        generator = generator_for(config.dataset)
        keys = {r["YCSB_KEY"] for r in stored}
        assert {generator.key(n) for n in range(1, RECORDS + 1)} <= keys

    @pytest.mark.parametrize("id_mode", ["client", "server"])
    def test_query_workload(
        self, loaded: Callable[..., dict[str, Any]], id_mode: str, tmp_path: Path
    ) -> None:
        target = loaded("indexed4", id_mode=id_mode)
        queries = ["indexedEquality", "twoFieldProjection", "sortSkip", "scan100"]
        phase = {"type": "query", "queries": queries, "operations": 200, "reportEvery": 100,
                 "idMode": id_mode}  # fmt: skip
        config = self.step(target, "indexed4", RECORDS, phase)
        assert run_step(config, tmp_path / "q") == 0
        summary = check_results(tmp_path / "q", operations=200)
        by_type = summary["operationsByType"]
        assert summary["errors"] == 0
        assert {k: v["operations"] for k, v in by_type.items()} == dict.fromkeys(queries, 50)
        assert by_type["scan100"]["rows"] == 50 * 100
        assert by_type["sortSkip"]["rows"] <= 50 * 10
        # scan100 has no condition: on a loaded table it must return rows, and did.
        assert (by_type["scan100"]["found"], by_type["scan100"]["notFound"]) == (50, 0)
        # The others may rightly come back empty on 240 records: counted, not errors.
        assert all(v["notFound"] == 0 and 0 <= v["found"] <= 50 for v in by_type.values())

    @pytest.mark.parametrize("shape", ["flat45", "news", "ycsb"])
    def test_point_reads_find_every_key(
        self, loaded: Callable[..., dict[str, Any]], shape: str, tmp_path: Path
    ) -> None:
        target = loaded(shape)
        config = self.step(
            target,
            shape,
            RECORDS,
            {"type": "pointReads", "keys": 150, "operations": 150, "reportEvery": 50},
        )
        assert run_step(config, tmp_path / "r") == 0
        summary = check_results(tmp_path / "r", operations=150)
        assert summary["operationsByType"]["read"]["rows"] == 150
        read = summary["operationsByType"]["read"]
        assert (read["found"], read["notFound"], summary["notFound"]) == (150, 0, 0)
        assert summary["status"] == "succeeded"

    @pytest.mark.parametrize("shape", ["flat45", "ycsb"])
    def test_point_reads_over_keys_not_in_the_table_fail_with_the_not_found_count(
        self, loaded: Callable[..., dict[str, Any]], shape: str, tmp_path: Path
    ) -> None:
        # The table holds records 1..120, the phase reads every key of 1..240 (a
        # hand-written step file: its plan says 240 were loaded), from two pods. The
        # server answers 120 of them with no row: errors, counted per type, each
        # pod fails, and the merge adds the pods' counts exactly.
        half = RECORDS // 2
        target = loaded(shape, records=half)
        phase = {"type": "pointReads", "keys": RECORDS, "operations": RECORDS, "reportEvery": 60}
        pods = []
        for pod in range(2):
            config = self.step(target, shape, RECORDS, phase, pod={"index": pod, "count": 2})
            assert run_step(config, tmp_path / f"pod{pod}") == EXIT_ERROR_RATE
            pods.append(json.loads((tmp_path / f"pod{pod}" / "summary.json").read_text()))
        reads = [p["operationsByType"]["read"] for p in pods]
        assert all(r["notFound"] > 0 and r["found"] > 0 for r in reads), reads
        assert sum(r["found"] for r in reads) == sum(r["notFound"] for r in reads) == half
        merge(tmp_path / "r", [tmp_path / "pod0", tmp_path / "pod1"])
        summary = check_results(tmp_path / "r", operations=RECORDS)
        read = summary["operationsByType"]["read"]
        assert (read["found"], read["notFound"], read["errors"]) == (half, half, half)
        assert (read["rows"], summary["notFound"], summary["errors"]) == (half, half, half)
        assert summary["errorsByType"] == {f"read:{NOT_FOUND}": half}
        assert summary["status"] == "failed"
        assert f"(read {half:,} of {RECORDS:,})" in summary["reason"]
        shown = step_result("r", 1, StepSummary.from_wire(summary))
        assert (shown.not_found, not_found_cell(shown)) == (half, f"read:{half:,}")

    def test_mix_over_keys_not_in_the_table_counts_what_each_type_did_not_find(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        # Reads, updates and read-modify-writes of keys drawn from 1..240 on a table
        # holding 1..120: the ones the workload addressed outside the table (replayed
        # from its seeded streams) are exactly those the server found nothing for.
        half = RECORDS // 2
        self.load(target, "ycsb", tmp_path / "load", records=half)
        phase = {"type": "mix", "mix": {"read": 40, "update": 30, "readModifyWrite": 30},
                 "operations": 300, "reportEvery": 100, "maxErrorRate": 1.0}  # fmt: skip
        config = self.step(target, "ycsb", RECORDS, phase)
        assert run_step(config, tmp_path / "mix") == 0  # maxErrorRate 1: measured, not failed
        by_type = check_results(tmp_path / "mix", operations=300)["operationsByType"]
        generator = generator_for(config.dataset)
        stored = {generator.key(n) for n in range(1, half + 1)}
        missing: Counter[str] = Counter()
        planned: Counter[str] = Counter()
        for worker in range(config.workers_total):
            operations = operations_for(config, generator, worker)
            for operation in itertools.islice(operations, operation_budget(config, worker)):
                assert isinstance(operation, Read | Update | ReadModifyWrite)
                planned[operation.kind] += 1
                missing[operation.kind] += operation.key not in stored
        assert set(planned) == {"read", "update", "readModifyWrite"}
        for kind, count in planned.items():
            values = by_type[kind]
            assert values["operations"] == count, kind
            assert 0 < missing[kind] < count, kind
            assert (values["found"], values["notFound"]) == (count - missing[kind], missing[kind])

    @pytest.mark.parametrize("distribution", ["zipfian", "latest", "hotspot"])
    def test_point_reads_from_a_distribution_find_their_keys(
        self, loaded: Callable[..., dict[str, Any]], distribution: str, tmp_path: Path
    ) -> None:
        target = loaded("flat45")
        chosen = {"type": distribution, **({"dataFraction": 0.1} if distribution == "hotspot"
                                           else {})}  # fmt: skip
        phase = {"type": "pointReads", "distribution": chosen, "operations": 120,
                 "reportEvery": 40}  # fmt: skip
        assert run_step(self.step(target, "flat45", RECORDS, phase), tmp_path / "r") == 0
        summary = check_results(tmp_path / "r", operations=120)
        assert summary["operationsByType"]["read"]["rows"] == 120  # every key drawn exists
        counters = summary["serverCounters"]
        if self.disk_reads_counter is None:
            assert counters is None
        else:
            assert counters["diskReadsCounter"] == self.disk_reads_counter
            assert counters["diskReads"] == counters["diskReadsAfter"] - counters["diskReadsBefore"]
            assert counters["diskReadsPerOperation"] == counters["diskReads"] / 120

    def test_two_pods_split_and_merge(self, target: dict[str, Any], tmp_path: Path) -> None:
        outs = []
        for pod in range(2):
            config = self.step(
                target,
                "flat45",
                RECORDS,
                {"type": "insert", "reportEvery": 40},
                pod={"index": pod, "count": 2},
            )
            assert run_step(config, tmp_path / f"pod{pod}") == 0
            outs.append(tmp_path / f"pod{pod}")
        merged = merge(tmp_path / "merged", outs)
        check_results(tmp_path / "merged", operations=RECORDS, records=RECORDS)
        assert merged.pods == (0, 1)
        generator = generator_for(config.dataset)
        assert self.stored(target, generator, "client") == self.expected(
            config, range(1, RECORDS + 1)
        )

    def test_warmup_and_duration(
        self, loaded: Callable[..., dict[str, Any]], tmp_path: Path
    ) -> None:
        target = loaded("flat45")  # a read-only mix
        phase = {
            "type": "mix",
            "mix": {"read": 1},
            "duration": "1500ms",
            "warmup": "500ms",
            "targetRate": self.paced_rate,
        }
        config = self.step(target, "flat45", RECORDS, phase)
        assert run_step(config, tmp_path / "m") == 0
        summary = check_results(tmp_path / "m", operations=_ops(tmp_path / "m"))
        rate = self.paced_rate
        assert 1.3 * rate <= summary["operations"] <= 1.6 * rate  # rate/s for 1.5 s
        assert 0.4 * rate <= summary["warmupOperations"] <= 0.6 * rate
        # A read-only mix writes no record: the status and summary.json show no
        # records rate for it (the quickstart's read/update mix showed 0.0).
        assert summary["writesRecords"] is False
        shown = step_result("m", 1, StepSummary.from_wire(summary))
        assert (shown.records, shown.records_per_second) == (None, None)

    def test_environment_records_when_the_server_started(
        self, target: dict[str, Any], tmp_path: Path
    ) -> None:
        """Two steps on one running server record the same start (the time read less
        the server's own uptime), before either began: a restart between steps
        (cache: cold, coldOnce) is what would move it."""
        self.load(target, "flat45", tmp_path / "load")
        config = self.step(target, "flat45", RECORDS, {"type": "pointReads", "operations": 20})
        assert run_step(config, tmp_path / "reads") == 0
        started = []
        for out in ("load", "reads"):
            server = json.loads((tmp_path / out / "environment.json").read_text())["server"]
            summary = json.loads((tmp_path / out / "summary.json").read_text())
            assert server["uptimeSeconds"] >= 0  # a server started this second: 0 (MySQL)
            assert server["startedAt"] < summary["startedAt"]
            started.append(server["startedAt"])
        assert abs(started[1] - started[0]) < 1.5, started  # MySQL counts whole seconds


def _ops(out: Path) -> int:
    return int(json.loads((out / "summary.json").read_text())["operations"])
