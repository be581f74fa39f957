"""The vehicle shape (field benchmark 4) through the real runner against a SQL
server (MySQL protocol or PostgreSQL): 14 tables, exact row counts, the
14-table read rebuilds the generator's latest test, the 85:15:5 mix, Mileage
updates, storage counts. The dialect's parts are methods a subclass overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbbench_runner.datasets import generator_for
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.running import run_step
from dbbench_runner.schema import vehicle as schema
from tests.support.runner_files import check_results, is_write_stamp_of

RECORDS = 240
ITEM_FIELDS = ("RfrID", "Type", "Location", "Dangerous", "Text", "Section")


def load_vehicles(config: Any, out: Path, records: int = RECORDS) -> Vehicle:
    """Runs the load step (batches of 20), checks its results and storage count;
    the step's generator."""
    assert run_step(config, out) == 0
    summary = check_results(out, operations=records // 20, records=records)
    assert summary["errors"] == 0
    assert summary["storage"]["records"] == records
    generator = generator_for(config.dataset, config.phase.id_mode)
    assert isinstance(generator, Vehicle)
    return generator


def rebuild(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The test object from the read's joined rows (one per item, or one without items)."""
    parent = {k: v for k, v in rows[0].items() if k not in (*ITEM_FIELDS, "Position")}
    items = [
        {**{f: row[f] for f in ITEM_FIELDS}, "Dangerous": bool(row["Dangerous"])}
        for row in rows
        if row["Position"] is not None
    ]
    assert [row["Position"] for row in rows if row["Position"] is not None] == list(
        range(len(items))
    )
    return {**parent, "Items": items}


class VehicleSqlContract:
    """Mixed into SqlContract: needs `step`, `target`, `self.server` and `rows`.

    The defaults are MySQL's; the PostgreSQL contract overrides the dialect."""

    def sql(self, target: dict[str, Any], statement: str, *params: object) -> list[dict[str, Any]]:
        raise NotImplementedError

    def q(self, name: str) -> str:
        """A quoted identifier in the server's dialect."""
        return f"`{name}`"

    def table_names(self, target: dict[str, Any]) -> list[str]:
        rows = self.sql(target, "SELECT table_name AS t FROM information_schema.tables "
                        "WHERE table_schema = %s", target["database"])  # fmt: skip
        return [r["t"] for r in rows]

    def vehicle_indexes(self, target: dict[str, Any], table: str) -> set[str]:
        rows = self.sql(target, "SELECT index_name AS i FROM information_schema.statistics "
                        "WHERE table_schema = %s AND table_name = %s",
                        target["database"], table)  # fmt: skip
        return {r["i"] for r in rows}

    def read_statement(self, generator: Vehicle) -> str:
        return schema.read_statement(generator)

    def tables(self, generator: Vehicle) -> tuple[str, ...]:
        return schema.tables(generator)

    def items_table(self, generator: Vehicle) -> str:
        return schema.items_table(generator)

    def expected_vehicle_indexes(self, id_mode: str) -> set[str]:
        primary = {"client": {"PRIMARY"}, "server": {"ix_TestID"}}[id_mode]
        return {*primary, "ix_VehicleID_TestDate"}

    def latest(self, target: dict[str, Any], generator: Vehicle, vehicle_id: int) -> dict[str, Any]:
        return rebuild(self.sql(target, self.read_statement(generator), vehicle_id))

    @pytest.mark.parametrize("id_mode", ["client", "server"])
    def test_vehicle_load_read_mix_update(
        self, target: dict[str, Any], id_mode: str, tmp_path: Path
    ) -> None:
        load = {"type": "insert", "idMode": id_mode, "batchSize": 20, "reportEvery": 40}
        config = self.step(target, "vehicle", RECORDS, load)  # type: ignore[attr-defined]
        assert config.threads == 2
        generator = load_vehicles(config, tmp_path / "load")
        assert sorted(self.table_names(target)) == sorted(self.tables(generator))
        assert (
            generator.table
            == {"client": "vehicle_test", "server": "vehicle_test_serverkey"}[id_mode]
        )
        indexes = self.vehicle_indexes(target, generator.table)
        assert indexes == self.expected_vehicle_indexes(id_mode)
        assert len(self.tables(generator)) == 14
        records = [generator.record(n) for n in range(1, RECORDS + 1)]
        self.check_counts(target, generator, records)
        for lookup in generator.lookups:
            count = self.sql(target, f"SELECT COUNT(*) AS n FROM {self.q(lookup.table)}")[0]["n"]
            assert count == len(lookup.rows), lookup.table
        # The read rebuilds the vehicle's latest test: lookups, items and all.
        latest = {int(str(r["VehicleID"])): r for r in records}  # later tests overwrite
        several = [v for v in latest if sum(r["VehicleID"] == v for r in records) > 1]
        for vehicle_id in [*several[:5], *list(latest)[-3:]]:
            assert self.latest(target, generator, vehicle_id) == latest[vehicle_id]
        assert any(latest[v]["Items"] for v in several[:5])

        mix = {"type": "mix", "mix": {"read": 85, "insert": 15, "update": 5}, "operations": 600,
               "reportEvery": 100, "distribution": {"type": "uniform"},
               "idMode": id_mode}  # fmt: skip
        config = self.step(target, "vehicle", RECORDS, mix)  # type: ignore[attr-defined]
        assert run_step(config, tmp_path / "mix") == 0
        summary = check_results(tmp_path / "mix", operations=600)
        by_type = summary["operationsByType"]
        assert summary["errors"] == 0
        assert set(by_type) == {"read", "insert", "update"}
        assert by_type["read"]["rows"] == by_type["read"]["operations"]  # one object per read
        inserted = by_type["insert"]["operations"]
        assert summary["records"] == inserted > 0
        assert summary["storage"]["records"] == RECORDS + inserted
        columns = ", ".join(self.q(c) for c in ("TestID", "VehicleID", "Mileage"))
        stored = self.sql(target, f"SELECT {columns} FROM {self.q(generator.table)}")
        assert len(stored) == RECORDS + inserted
        numbers = sorted(int(r["TestID"]) for r in stored)
        self.check_counts(target, generator, [generator.record(n) for n in numbers])
        # updates changed Mileage (original + 1 + the write's stamp) and nothing else
        changed = [r for r in stored if r["Mileage"] != generator.mileage(r["TestID"])]
        assert changed
        assert all(is_write_stamp_of(r["Mileage"] - generator.mileage(r["TestID"]), 600)
                   for r in changed)  # fmt: skip
        # a test inserted by the mix is now its vehicle's latest
        newest = max(numbers)
        owner = generator.vehicle(newest)
        read = self.latest(target, generator, owner)
        assert read["TestID"] == newest
        assert {k: v for k, v in read.items() if k != "Mileage"} == {
            k: v for k, v in generator.record(newest).items() if k != "Mileage"
        }

    def check_counts(
        self, target: dict[str, Any], generator: Vehicle, records: list[dict[str, Any]]
    ) -> None:
        tests = self.sql(target, f"SELECT COUNT(*) AS n FROM {self.q(generator.table)}")[0]["n"]
        item_table = self.q(self.items_table(generator))
        items = self.sql(target, f"SELECT COUNT(*) AS n FROM {item_table}")[0]["n"]
        assert (tests, items) == (len(records), sum(len(r["Items"]) for r in records))
