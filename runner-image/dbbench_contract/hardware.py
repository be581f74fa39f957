"""A target's hardware as the run's summary carries it: the one merge rule.

A BenchmarkRun has one `spec.hardware`; a target may set its own
`targets[].hardware`, and each field it sets replaces the run's field of the
same name as a whole (resources with its requests and limits, storage with
its class and size); the fields it leaves unset come from the run's. The
operator applies the rule to its typed API model (which has these fields, a
test says so); the report applies it to the summary's spec, which is wire
JSON (camelCase).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

# The fields a target's own hardware may set (`exclusive` stays the run's).
TARGET_HARDWARE_FIELDS: Final = (
    "nodeSelector",
    "tolerations",
    "affinity",
    "resources",
    "configServerResources",
    "mongosResources",
    "storage",
    "pricePerHour",
)


def target_hardware(spec: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
    """The hardware `target` (one of spec["targets"]) ran on, as wire JSON."""
    merged = dict(spec.get("hardware") or {})
    own = target.get("hardware") or {}
    merged.update({k: v for k, v in own.items() if k in TARGET_HARDWARE_FIELDS and v is not None})
    return merged
