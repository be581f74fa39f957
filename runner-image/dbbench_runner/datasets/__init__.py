"""Deterministic data-set generators, one module per shape.

Records a phase inserts with `idMode: server` (the database makes the key)
live in their own table or collection, `<table>_serverkey`, beside the
client-keyed `<table>`: the two layouts differ (no primary key / ObjectId
`_id`), and one run may load both (field benchmark 1's four insert modes).
A phase's idMode says which of the two it writes and reads.
"""

from __future__ import annotations

from dbbench_contract.api.phases import IdMode
from dbbench_contract.api.spec import Dataset
from dbbench_runner.datasets.base import Column, DatasetGenerator, Record, record_size
from dbbench_runner.datasets.flat45 import Flat45
from dbbench_runner.datasets.indexed4 import Indexed4
from dbbench_runner.datasets.news import News
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.datasets.ycsb import Ycsb

__all__ = [
    "SERVER_KEY_SUFFIX", "Column", "DatasetGenerator", "Record", "generator_for", "keyed_table",
    "record_size",
]  # fmt: skip

SERVER_KEY_SUFFIX = "_serverkey"


def keyed_table(table: str, id_mode: IdMode) -> str:
    """The table (collection) records of `id_mode` live in."""
    return table if id_mode == "client" else f"{table}{SERVER_KEY_SUFFIX}"


def generator_for(dataset: Dataset, id_mode: IdMode = "client") -> DatasetGenerator:
    generator = _shape(dataset)
    generator.table = keyed_table(generator.table, id_mode)
    return generator


def _shape(dataset: Dataset) -> Flat45 | Indexed4 | News | Vehicle | Ycsb:
    shapes: dict[str, type[Flat45 | Indexed4 | News | Vehicle | Ycsb]] = {
        "flat45": Flat45,
        "indexed4": Indexed4,
        "news": News,
        "vehicle": Vehicle,
        "ycsb": Ycsb,
    }
    if dataset.shape == "news":
        return News(dataset.seed, dataset.record_size, tags_index=dataset.tags_index)
    if dataset.shape == "vehicle":
        return Vehicle(dataset.seed, reads_by_test=dataset.source is not None)
    return shapes[dataset.shape](dataset.seed, dataset.record_size)
