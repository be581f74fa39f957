"""The per-shard storage format: storage.csv's `shards` cell and the summary's
`storage.shards`, as the runner writes them and the merge and report read them."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from dbbench_contract.shard_storage import ShardStorage, decode_shards, encode_shards
from dbbench_contract.summary import StorageBlock

SHARDS = (
    ShardStorage(shard="shard0", documents=66_512, data_bytes=68_108_288, index_bytes=4_308_992,
                 storage_bytes=38_932_480, chunks=3),
    ShardStorage(shard="shard1", documents=66_901, data_bytes=68_506_624, index_bytes=4_329_472,
                 storage_bytes=39_141_376, chunks=None),
)  # fmt: skip


def test_a_cell_is_compact_camel_case_json_and_reads_back() -> None:
    cell = encode_shards(SHARDS)
    assert "\n" not in cell
    assert " " not in cell  # one csv cell, no padding
    assert json.loads(cell)[1] == {"shard": "shard1", "documents": 66_901,
                                   "dataBytes": 68_506_624, "indexBytes": 4_329_472,
                                   "storageBytes": 39_141_376, "chunks": None}  # fmt: skip
    assert decode_shards(cell) == SHARDS


def test_no_shards_is_an_empty_cell_and_a_missing_column_reads_as_none() -> None:
    assert encode_shards(()) == ""
    assert decode_shards("") == ()
    assert decode_shards(None) == ()


def test_a_newer_writers_keys_are_ignored_and_a_broken_cell_is_an_error() -> None:
    newer = '[{"shard":"shard0","documents":1,"orphans":0}]'
    assert decode_shards(newer) == (ShardStorage(shard="shard0", documents=1),)
    with pytest.raises(ValidationError):
        decode_shards('[{"documents":1}]')  # a shard without its name


def test_the_summary_writes_shards_only_for_a_sharded_target() -> None:
    assert "shards" not in StorageBlock(records=10).to_wire()
    block = StorageBlock(records=133_413, shards=SHARDS)
    assert StorageBlock.from_wire(block.to_wire()).shards == SHARDS
