"""A sharded MongoDB target's collection, shard by shard, in a storage sample.

Field benchmark 2 ended with each shard's document count, size and chunks:
how evenly the hashed shard key spread the data. Every storage sample of a
sharded target holds one ShardStorage per shard: in `storage.csv` as the
`shards` column (a JSON list, empty for other targets), in the summary's
`storage.shards` for the last sample. Written by the runner, read back by the
merge and the report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import TypeAdapter

from dbbench_contract.wire import StoredModel


class ShardStorage(StoredModel):
    """One shard's part of the phase's collection, as the shard itself counts it
    (`$collStats` storageStats through mongos) and as the config servers place
    chunks (`config.chunks`)."""

    shard: str
    # The shard's own count of the collection's documents (its metadata count:
    # orphans left by a migration are counted until the range deleter removes them).
    documents: int = 0
    data_bytes: int = 0  # uncompressed (storageStats.size)
    index_bytes: int = 0  # storageStats.totalIndexSize
    storage_bytes: int = 0  # on disk: storageStats.storageSize + totalIndexSize
    # Chunks the config servers place on this shard; None when config.chunks
    # could not be read (a user without read access to the config database).
    chunks: int | None = None


_LIST = TypeAdapter(tuple[ShardStorage, ...])


def encode_shards(shards: Sequence[ShardStorage]) -> str:
    """The `shards` cell of a storage.csv row: compact JSON, "" when there are none."""
    if not shards:
        return ""
    return json.dumps([s.to_wire() for s in shards], separators=(",", ":"))


def decode_shards(cell: str | None) -> tuple[ShardStorage, ...]:
    """A `shards` cell back (files without the column: none)."""
    if not cell:
        return ()
    return _LIST.validate_json(cell)
