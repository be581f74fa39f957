"""Deterministic data-set generators, one module per shape."""

from __future__ import annotations

from dbbench_runner.config import Dataset
from dbbench_runner.datasets.base import Column, DatasetGenerator, Record, record_size
from dbbench_runner.datasets.flat45 import Flat45
from dbbench_runner.datasets.indexed4 import Indexed4
from dbbench_runner.datasets.news import News
from dbbench_runner.datasets.vehicle import Vehicle
from dbbench_runner.datasets.ycsb import Ycsb

__all__ = ["Column", "DatasetGenerator", "Record", "generator_for", "record_size"]


def generator_for(dataset: Dataset) -> DatasetGenerator:
    shapes: dict[str, type[Flat45 | Indexed4 | News | Vehicle | Ycsb]] = {
        "flat45": Flat45,
        "indexed4": Indexed4,
        "news": News,
        "vehicle": Vehicle,
        "ycsb": Ycsb,
    }
    if dataset.shape == "news":
        return News(dataset.seed, dataset.record_size, tags_index=dataset.tags_index)
    return shapes[dataset.shape](dataset.seed, dataset.record_size)
