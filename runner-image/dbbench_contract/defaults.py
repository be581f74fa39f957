"""Defaults that more than one program applies: each exists once, here.

The API model (the CRD's `default`s and `kubectl explain` text), the step
file's models (a step file that leaves a field out) and the report (reading
files that predate a field) all take these.
"""

from __future__ import annotations

# Stability series granularity: records for insert phases, operations otherwise.
REPORT_EVERY = 10_000
# A phase fails when errors / operations exceed this.
MAX_ERROR_RATE = 0.01
# Records per insert call.
BATCH_SIZE = 1
# Records a scan reads from its start key.
SCAN_LENGTH = 100
# hotspot: the share of the key range that is hot, and of operations that hit it.
HOTSPOT_DATA_FRACTION = 0.1
HOTSPOT_OPERATION_FRACTION = 1.0
# zipfian and latest: YCSB's skew constant.
ZIPFIAN_CONSTANT = 0.99
# Record payload bytes (default and the range the generators honour) and the
# generator seed of a data set.
RECORD_SIZE = 1024
MIN_RECORD_SIZE = 128
MAX_RECORD_SIZE = 1_048_576
SEED = 42
# A pod's latency above this share of its CPU budget marks it client-bound.
CLIENT_BOUND_THRESHOLD = 0.8
