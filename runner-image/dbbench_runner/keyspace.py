"""How the record numbers are divided among pods and worker connections.

Worker w of W (W = pods x threads, w = pod.index x threads + thread) owns the
contiguous slice split(total, W, w): slices never overlap and together cover
1..total exactly (shifted to start at firstRecord). New records inserted by a
mix phase are numbered from firstRecord (past the loaded set and every earlier
phase's inserts) with stride W, so concurrent inserters never collide (with
thread groups, stride the insert group's size: workloads/mix.py).

Every phase and repeat draws its own operations (stream_seed), and every write
of a run carries a stamp no other write of the run has (write_stamp): a repeat
never replays the previous repeat's keys nor rewrites the values they stored.
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


# Step positions (phaseIndex, repeat) take the low bits of a write stamp.
PHASE_INDEX_LIMIT = 1 << 10
REPEAT_LIMIT = 1 << 10
STEP_BITS = 20
STAMP_LIMIT = 1 << 62


def step_position(phase_index: int, repeat: int) -> int:
    """(phase's index in the run, repeat 1..) as one number below 2**20."""
    if not 0 <= phase_index < PHASE_INDEX_LIMIT or not 1 <= repeat <= REPEAT_LIMIT:
        raise ValueError(f"phaseIndex {phase_index} / repeat {repeat} out of range")
    return phase_index * REPEAT_LIMIT + repeat - 1


def stream_seed(seed: int, position: int, worker: int | None = None) -> int:
    """The seed of a random stream: dataset seed, step position and (unless the
    stream is shared by all workers, like point reads' permutation) the worker."""
    mixed = splitmix64(seed ^ splitmix64(position))
    return mixed if worker is None else splitmix64(mixed ^ splitmix64(worker + 1) ^ 0x5EED)


def write_stamp(position: int, workers: int, worker: int, sequence: int) -> int:
    """A number unique to this write among all writes of the run: the worker's
    sequence-th operation (0-based) in the step at `position` (step_position).

    Injective: (sequence * workers + worker) identifies the operation within the
    step, the low 20 bits the step. Datasets put it into the values they write.
    """
    stamp = ((sequence * workers + worker) << STEP_BITS) | position
    if stamp >= STAMP_LIMIT:
        raise ValueError("write stamp beyond 2**62: more than 2**42 operations in one step")
    return stamp


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
