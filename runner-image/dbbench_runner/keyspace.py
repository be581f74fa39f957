"""How the record numbers are divided among pods and worker connections.

Worker w of W (W = pods x threads, w = pod.index x threads + thread) owns the
contiguous slice split(total, W, w): slices never overlap and together cover
1..total exactly (shifted to start at firstRecord). New records inserted by a
mix phase are numbered from firstRecord (past the loaded set and every earlier
phase's inserts) with stride W, so concurrent inserters never collide.
"""

from __future__ import annotations

from dbbench_runner.datasets.base import splitmix64


def split(total: int, parts: int, index: int) -> range:
    """Record numbers (1-based) owned by part `index` of `parts`."""
    if parts < 1 or not 0 <= index < parts:
        raise ValueError(f"index {index} not in 0..{parts - 1}")
    start = index * total // parts
    end = (index + 1) * total // parts
    return range(start + 1, end + 1)


def worker_index(pod_index: int, threads: int, thread: int) -> int:
    return pod_index * threads + thread


def new_record_number(after: int, workers: int, worker: int, sequence: int) -> int:
    """The sequence-th (0-based) record a worker inserts after record number `after`."""
    return after + 1 + worker + sequence * workers


class Permutation:
    """A seeded bijection on 0..n-1 in constant memory.

    A 4-round Feistel network on the smallest even number of bits that covers n,
    with cycle walking to stay in range: point reads take the first K positions
    to get K distinct random keys without storing them.
    """

    ROUNDS = 4

    def __init__(self, n: int, seed: int) -> None:
        if n < 1:
            raise ValueError("permutation of an empty range")
        self._n = n
        bits = max(2, (n - 1).bit_length())
        self._half = (bits + 1) // 2
        self._mask = (1 << self._half) - 1
        self._keys = [splitmix64(seed * 31 + r) for r in range(self.ROUNDS)]

    def _round(self, value: int) -> int:
        left, right = value >> self._half, value & self._mask
        for key in self._keys:
            left, right = right, left ^ (splitmix64(right ^ key) & self._mask)
        return (left << self._half) | right

    def __call__(self, position: int) -> int:
        if not 0 <= position < self._n:
            raise IndexError(position)
        value = self._round(position)
        while value >= self._n:
            value = self._round(value)
        return value
