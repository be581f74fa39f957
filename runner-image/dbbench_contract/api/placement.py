"""Where pods run: ``spec.hardware`` (the databases) and ``spec.runner`` (load)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, StringConstraints, WithJsonSchema

from .base import ApiModel, Rule, wire_default
from .statements import STATEMENTS_DOC, StatementMode

# A Kubernetes quantity: "8Gi", "500m" or a plain number (the API server's own pattern).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def _quantity(value: object) -> str | int:
    # One validator instead of a str | int union, so errors carry the field's path only.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.match(QUANTITY_PATTERN, value):
        return value
    raise ValueError(f"{value!r} is not a Kubernetes quantity such as 8Gi, 500m or 2")


Quantity = Annotated[
    str | int,
    PlainValidator(_quantity),
    WithJsonSchema(
        {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": QUANTITY_PATTERN}]}
    ),
]


class Resources(ApiModel):
    """Container resources, as in a Pod spec."""

    requests: dict[str, Quantity] | None = Field(
        default=None,
        max_length=16,
        description='Minimum resources, e.g. {cpu: "2", memory: 8Gi}.',
    )
    limits: dict[str, Quantity] | None = Field(
        default=None,
        max_length=16,
        description=(
            'Maximum resources, e.g. {cpu: "2", memory: 8Gi}. limits.memory is the '
            "memory the data-set-to-memory ratio is computed against; cache settings "
            "must fit in it. Equal requests and limits give the Guaranteed QoS class."
        ),
    )


class Toleration(ApiModel):
    """A Pod toleration, as in a Pod spec."""

    key: str | None = Field(default=None, max_length=316, description="Taint key to match.")
    operator: Literal["Exists", "Equal"] | None = Field(
        default=None, description="Exists or Equal (default Equal)."
    )
    value: str | None = Field(default=None, max_length=63, description="Taint value to match.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect to match; empty matches all effects."
    )
    toleration_seconds: int | None = Field(
        default=None, description="For NoExecute: how long the pod stays bound after the taint."
    )

    # The API server's own Pod validation, at admission instead of when the
    # operator's StatefulSet or Job is refused mid-run.
    RULES = (
        Rule(
            cel="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",
            message="tolerationSeconds is only valid with effect: NoExecute",
            field="tolerationSeconds",
            holds=lambda t: t.toleration_seconds is None or t.effect == "NoExecute",
        ),
        Rule(
            cel="!has(self.operator) || self.operator != 'Exists' || !has(self.value)",
            message="value must be empty with operator: Exists",
            field="value",
            reason="FieldValueForbidden",
            holds=lambda t: t.operator != "Exists" or t.value is None,
        ),
        Rule(
            cel="has(self.key) || (has(self.operator) && self.operator == 'Exists')",
            message="a toleration without key must use operator: Exists (it tolerates every taint)",
            field="operator",
            holds=lambda t: t.key is not None or t.operator == "Exists",
        ),
    )


LabelValue = Annotated[str, StringConstraints(max_length=63)]
NODE_SELECTOR_DOC = (
    "Node labels the pods must match, e.g. {node.kubernetes.io/instance-type: m5.xlarge}."
)
TOLERATIONS_DOC = "Tolerations added to the pods, e.g. for a tainted benchmark node pool."


class Storage(ApiModel):
    """The volume of each database pod."""

    storage_class_name: str | None = Field(
        default=None,
        max_length=253,
        description="StorageClass of the data volumes; unset uses the cluster's default class.",
    )
    size: Quantity = Field(
        default="10Gi",
        description=(
            "Size of each database pod's data volume, e.g. 20Gi. Must hold the data set "
            "(about records x recordSize plus indexes). Default 10Gi."
        ),
    )


class _Placement(ApiModel):
    """The fields a run's `hardware` and a target's own `hardware` share."""

    node_selector: dict[str, LabelValue] | None = Field(
        default=None, max_length=16, description=NODE_SELECTOR_DOC
    )
    tolerations: list[Toleration] | None = Field(
        default=None, max_length=16, description=TOLERATIONS_DOC
    )
    affinity: dict[str, Any] | None = Field(
        default=None,
        description="Pod affinity/anti-affinity, as in a Pod spec (passed through unchanged).",
    )
    resources: Resources | None = Field(
        default=None,
        description=(
            "Resources of each database server container. Unset means no requests or "
            "limits: results then depend on whatever else runs on the node."
        ),
    )
    config_server_resources: Resources | None = Field(
        default=None,
        description=(
            "topology sharded: resources of each config-server container (they hold only "
            "metadata). Default {cpu: 500m, memory: 1Gi} as requests and limits; their "
            "WiredTiger cache is sized from this memory, not from `resources`."
        ),
    )
    mongos_resources: Resources | None = Field(
        default=None,
        description=(
            "topology sharded: resources of each mongos router container. Default "
            "{cpu: 1, memory: 1Gi} as requests and limits."
        ),
    )
    price_per_hour: float | None = Field(
        default=None,
        ge=0,
        description=(
            "Price of one database pod's hardware per hour, in any currency. When set, "
            "results also give cost per million operations."
        ),
    )


class TargetHardware(_Placement):
    """This target's own hardware. Each field set here replaces the run's
    `spec.hardware` field of the same name as a whole (resources replaces
    resources with its requests and limits; storage replaces storage, so an
    unset size is the 10Gi default, not the run's; an empty nodeSelector clears
    the run's); unset fields come from `spec.hardware`. For engines that need
    other machines (field benchmark 4: MongoDB on 8 GB, MySQL and PostgreSQL on
    16 GB) and their own price. Node exclusivity stays the run's
    (`spec.hardware.exclusive`), over the nodes of all its targets."""

    storage: Storage | None = Field(
        default=None,
        description=(
            "Data volume of each of this target's database pods; replaces "
            "spec.hardware.storage as a whole."
        ),
    )


# What a target's own hardware may set only when the target is deployed:
# {wire name: Python name}, every field but the price.
_DEPLOYED_HARDWARE = {
    str(info.alias): name
    for name, info in TargetHardware.model_fields.items()
    if name != "price_per_hour"
}


# Cross-field rules of `targets[].hardware`, owned by Target (they read its
# engine, topology and external fields).
TARGET_HARDWARE_RULES = (
    Rule(
        cel=(
            "!has(self.external) || !has(self.hardware) || ("
            + " && ".join(f"!has(self.hardware.{k})" for k in _DEPLOYED_HARDWARE)
            + ")"
        ),
        message=(
            "an external target's hardware may set only pricePerHour (the price of the "
            "existing database): nothing is deployed, so remove " + ", ".join(_DEPLOYED_HARDWARE)
        ),
        field="hardware",
        reason="FieldValueForbidden",
        holds=lambda t: (
            t.external is None
            or t.hardware is None
            or all(getattr(t.hardware, n) is None for n in _DEPLOYED_HARDWARE.values())
        ),
    ),
    Rule(
        cel=(
            "!has(self.hardware) || self.topology == 'sharded' || "
            "(!has(self.hardware.configServerResources) && !has(self.hardware.mongosResources))"
        ),
        message=(
            "hardware.configServerResources and hardware.mongosResources size a sharded "
            "cluster's config servers and routers: remove them or use topology sharded"
        ),
        field="hardware",
        reason="FieldValueForbidden",
        holds=lambda t: (
            t.hardware is None
            or t.topology == "sharded"
            or (t.hardware.config_server_resources is None and t.hardware.mongos_resources is None)
        ),
    ),
)


class Hardware(_Placement):
    """Where and with what resources the databases under test run. Every target
    uses it unless it sets its own `hardware`, which overrides it field by field."""

    storage: Storage = Field(
        default_factory=Storage,
        description="Data volume of each database pod (default: 10Gi of the default class).",
        json_schema_extra=wire_default(Storage),
    )
    exclusive: bool = Field(
        default=True,
        description=(
            "When true (default), no other BenchmarkRun may use these nodes while this "
            "run's databases exist: runs wait for each other instead of disturbing results. "
            "The nodes are those of every target's pool (their own nodeSelector or this one)."
        ),
    )

    def overridden_by(self, own: TargetHardware | None) -> Hardware:
        """This hardware with every field `own` sets replacing the same field whole."""
        if own is None:
            return self
        update = {
            name: getattr(own, name)
            for name in type(own).model_fields
            if getattr(own, name) is not None
        }
        return self.model_copy(update=update)


class Runner(ApiModel):
    """The load generator: `pods` runner pods, each with `processes` worker
    processes that together hold `threads` connections. Results of all pods are
    merged exactly (HDR histograms)."""

    pods: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Runner pods; the load is split evenly between them. Default 1.",
    )
    threads: int = Field(
        default=1,
        ge=1,
        le=1024,
        description=(
            "Client connections per runner pod (default 1, a single connection as in most "
            "published benchmarks). A phase's `threads` overrides it for that phase. Must "
            "be a multiple of `processes`."
        ),
    )
    processes: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description=(
            "Worker processes per runner pod, sharing `threads` evenly. Default: one per CPU "
            "the pod may use (its CPU limit, else its node's cores), at most `threads`, so "
            "that one pod uses all the CPU it is given."
        ),
    )
    mysql_driver: Literal["mysqlclient", "mysql-connector-python"] | None = Field(
        default=None,
        description=(
            "Client library of the runner's MySQL/MariaDB connections: mysqlclient (the C "
            "client library; default) or mysql-connector-python. Ignored for MongoDB."
        ),
    )
    statements: StatementMode | None = Field(default=None, description=STATEMENTS_DOC)
    node_selector: dict[str, LabelValue] | None = Field(
        default=None, max_length=16, description=NODE_SELECTOR_DOC
    )
    tolerations: list[Toleration] | None = Field(
        default=None, max_length=16, description=TOLERATIONS_DOC
    )
    resources: Resources | None = Field(
        default=None, description="Resources of each runner pod's container."
    )

    RULES = (
        Rule(
            cel="!has(self.processes) || self.threads % self.processes == 0",
            message=(
                "threads must be a multiple of processes "
                "(each process runs threads/processes connections)"
            ),
            field="threads",
            holds=lambda r: r.processes is None or r.threads % r.processes == 0,
        ),
    )
