"""The step file: what one runner Job does (one target, one data set, one phase).

The operator writes it (``dbbench_operator.specs.runner_job``) into a ConfigMap
that every pod of the step's Job mounts; the runner reads it
(``dbbench_runner.config``). Its ``phase`` is the run's ``spec.phases[i]`` and
its ``dataset`` the run's ``spec.dataset``: the API's own models
(``dbbench_contract.api``), not a copy of their fields, checked by the same
rules as at admission (for step files written by hand). What the step adds is
its own: where the target is and how to log in, the step's place in the table
(``dataset.recordsBefore``, ``firstRecord``), the pods and connections, and
runner knobs the CRD does not offer (``tuning``). The runner reads the phase
through the properties below (write concern, keys, operations, key choice),
each resolved from the API's fields in one place.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field, model_validator

from dbbench_contract import defaults
from dbbench_contract.api.mix import group_sizes, groups_problem
from dbbench_contract.api.phases import (
    DistributionType,
    IdMode,
    Phase,
    QueryKind,
    WriteConcern,
)
from dbbench_contract.api.sources import SOURCE_MOUNT
from dbbench_contract.api.spec import HASHED_KEY_SHAPES, MIN_HASHED_FRACTION, Dataset
from dbbench_contract.api.statements import StatementMode, statement_mode, statements_problem
from dbbench_contract.api.targets import DURABILITY_WRITE_CONCERN, Durability, Engine
from dbbench_contract.wire import WireModel

__all__ = [
    "HASHED_KEY_SHAPES",
    "MIN_HASHED_FRACTION",
    "DatabaseHost",
    "DatabasePod",
    "Endpoint",
    "IdMode",
    "KeyChoice",
    "MySQLDriverName",
    "Pod",
    "StepConfig",
    "StepDataset",
    "Target",
    "Tuning",
    "describe_error",
]

# The client library of the MySQL/MariaDB driver.
MySQLDriverName = Literal["mysqlclient", "mysql-connector-python"]
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_FIELD_PREFIX = re.compile(r"^([A-Za-z][\w.]*): ")


class Endpoint(WireModel):
    host: str
    port: int = Field(ge=1, le=65535)


class Target(WireModel):
    """Where the database is and how to log in (the password only by file)."""

    name: str = Field(min_length=1)
    engine: Engine
    # The target's durability profile (spec.targets[].durability): the write
    # concern of MongoDB phases that set none. Unset (a step file written by
    # hand): acknowledged.
    durability: Durability | None = None
    uri: str | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    password_file: Path | None = None
    password: str | None = None
    database: str = Field(default="dbbench", pattern=IDENTIFIER)
    # Sharded MongoDB: the key the operator sharded the collection on (recorded only).
    shard_key: str | None = Field(default=None, max_length=256)
    # Read replicas for readPreference != primary on the relational engines
    # (MongoDB routes reads itself from the URI's replica set).
    replicas: tuple[Endpoint, ...] = ()
    connect_retries: int = Field(default=5, ge=1, le=100)
    connect_timeout: float = Field(default=5.0, gt=0)
    # A file holding the URI (a mounted Secret): mongodb://... for mongodb,
    # mysql://, mariadb:// or postgresql:// (user, password, host, port, database) otherwise.
    uri_file: Path | None = None

    @model_validator(mode="after")
    def _one_address(self) -> Target:
        given = [self.uri is not None, self.uri_file is not None, self.host is not None]
        if sum(given) != 1:
            raise ValueError("uri: give exactly one of uri, uriFile or host")
        if self.uri is not None and self.engine != "mongodb":
            raise ValueError(
                "uri: only for mongodb; use host/port/user (or uriFile) for the SQL engines"
            )
        return self


class StepDataset(Dataset):
    """The run's data set (the API's ``Dataset``: shape, recordSize, seed,
    tagsIndex) as one step sees its table. ``records``: for an insert phase the
    records it loads (its ``operations``, else the data set's), otherwise the
    loaded set keys are drawn from."""

    # Records the table holds before this phase (storage samples add what the
    # phase writes to it). Unset: 0 for insert phases, `records` otherwise.
    records_before: int | None = Field(default=None, ge=0)
    # Number of the first record this phase inserts: after the highest number
    # any earlier phase wrote, so client-numbered keys never collide. Unset: 1
    # for insert phases, records + 1 otherwise.
    first_record: int | None = Field(default=None, ge=1)
    # Where `source.files` are (the claim's mount in a runner pod; a directory of
    # the test's own when the runner runs outside Kubernetes).
    source_root: Path = Path(SOURCE_MOUNT)


class Tuning(WireModel):
    """Runner knobs the CRD does not offer: the operator leaves them at their
    defaults; step files written by hand, presets and benchmarks may set them."""

    # Records a scan reads from its start key.
    scan_length: int = Field(default=defaults.SCAN_LENGTH, ge=1, le=10_000)
    # hotspot: the share of the operations that go to the hot set (1.0: only it).
    operation_fraction: float = Field(default=defaults.HOTSPOT_OPERATION_FRACTION, ge=0, le=1)
    # zipfian and latest: the skew constant.
    zipfian_constant: float = Field(default=defaults.ZIPFIAN_CONSTANT, gt=0, lt=1)


@dataclass(frozen=True)
class KeyChoice:
    """How the phase picks keys: its distribution with every default applied.

    hotspot: the hot set is the lowest ``data_fraction`` of the key order (the
    table's clustered order: record numbers for int keys, the hashes for flat45
    and ycsb) and receives ``operation_fraction`` of the operations.
    """

    type: DistributionType = "uniform"
    data_fraction: float = defaults.HOTSPOT_DATA_FRACTION
    operation_fraction: float = defaults.HOTSPOT_OPERATION_FRACTION
    zipfian_constant: float = defaults.ZIPFIAN_CONSTANT


def _located(where: str, message: str) -> str:
    """`where: message`, once: the API's rule messages start with their field's name
    for the API server's sake (`mix: read + ...`), which `where` already ends with."""
    return f"{where}: {message.removeprefix(where.rsplit('.', 1)[-1] + ': ')}"


def _broken_rules(model: BaseModel, path: str) -> list[str]:
    """The API's cross-field rules (the CRD's CEL rules, in Python) that `model`
    and the models in it break, each as `<path>.<field>: <message>`."""
    found = [
        _located(f"{path}.{rule.field}" if rule.field else path, rule.message_for(model))
        for rule in getattr(type(model), "RULES", ())
        if not rule.holds(model)
    ]
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            alias = type(model).model_fields[name].alias or name
            found.extend(_broken_rules(value, f"{path}.{alias}"))
    return found


class Pod(WireModel):
    index: int = Field(default=0, ge=0)
    count: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _in_range(self) -> Pod:
        if self.index >= self.count:
            raise ValueError("index: must be less than count")
        return self


# Roles (the pods' app.kubernetes.io/component) of a sharded MongoDB target's
# pods that hold no data: config servers hold the cluster's metadata, routers
# (mongos) no storage at all.
CONFIG_SERVER_ROLE = "configsvr"
ROUTER_ROLE = "mongos"
NO_DATA_ROLES = frozenset({CONFIG_SERVER_ROLE, ROUTER_ROLE})


class DatabasePod(WireModel):
    """A pod of the database under test, as the operator saw it when the step began."""

    name: str
    node: str | None = None
    role: str | None = None  # primary, replica, mongod, shard0, configsvr, mongos...
    # The pod's database container's limits (config servers and routers have their own).
    memory_limit_bytes: int | None = Field(default=None, ge=0)
    cpu_limit: float | None = Field(default=None, ge=0)

    @property
    def holds_data(self) -> bool:
        return self.role not in NO_DATA_ROLES


class DatabaseHost(WireModel):
    """Where the database under test runs (absent for external targets)."""

    pods: tuple[DatabasePod, ...] = ()
    # The limits of the pods that hold the data (every member of a replica set or
    # primary/replica group, every shard's mongod; never a config server's or a
    # router's): the target's hardware.resources. None when they differ.
    memory_limit_bytes: int | None = Field(default=None, ge=0)
    cpu_limit: float | None = Field(default=None, ge=0)

    def role_limits(self, role: str) -> tuple[int | None, float | None]:
        """(memory, cpu) limits of the pods of one role (a shard's name), when they agree."""
        pods = [p for p in self.pods if p.role == role]
        memory = {p.memory_limit_bytes for p in pods}
        cpu = {p.cpu_limit for p in pods}
        return (
            memory.pop() if len(memory) == 1 else None,
            cpu.pop() if len(cpu) == 1 else None,
        )


class StepConfig(WireModel):
    """One step file. ``repeat`` and ``step`` make each repeat's operations its own."""

    target: Target
    dataset: StepDataset
    phase: Phase
    tuning: Tuning = Tuning()
    pod: Pod = Pod()
    # The step's place in the run's plan (1-based), the phase's index in
    # spec.phases and the repeat (1-based). Phase and repeat seed the operation
    # streams and stamp the writes (keyspace.step_position), so repeats and
    # phases never replay each other's operations or values, and two targets of
    # one run get the same operations.
    step: int = Field(default=1, ge=1)
    phase_index: int = Field(default=0, ge=0, le=1023)
    repeat: int = Field(default=1, ge=1, le=1024)
    database_host: DatabaseHost | None = None
    threads: int = Field(default=1, ge=1, le=4096)
    processes: int | None = Field(default=None, ge=1, le=256)
    # Ignored for other engines. mysqlclient spends ~1/5 of the connector's CPU per call.
    mysql_driver: MySQLDriverName = "mysqlclient"
    # runner.statements (None: the engine's default; the operator leaves it unset
    # for MongoDB targets, which have no statements).
    statements: StatementMode | None = None
    progress_every: float = Field(default=5.0, gt=0)
    storage_every: float = Field(default=10.0, gt=0)
    # When the step's Job ends (its creation plus activeDeadlineSeconds, UTC):
    # pods retry their uploads until shortly before it, so a results service
    # that restarts or is busy costs time, not results. None (a step file
    # written by hand): the runner's own budget (10 minutes, uploading.py).
    job_deadline: AwareDatetime | None = None

    @model_validator(mode="after")
    def _consistent(self) -> StepConfig:
        # The rules admission applies to a phase and a data set, then what only
        # the pairing of this step's target, data set and phase can break.
        broken = _broken_rules(self.phase, "phase") + _broken_rules(self.dataset, "dataset")
        if broken:
            raise ValueError("; ".join(broken))
        if self.target.engine != "mongodb" and self.write_concern != "acknowledged":
            raise ValueError(
                f"phase.writeConcern: {self.write_concern} has no per-statement "
                f"equivalent on {self.target.engine}; durability is a server setting "
                "(target durability profile), use acknowledged"
            )
        refused = statements_problem(self.target.engine, self.statements, self.mysql_driver)
        if refused is not None:
            raise ValueError(refused)
        if self.phase.type == "query" and self.dataset.shape != "indexed4":
            raise ValueError("phase.queries: the query workload needs dataset.shape indexed4")
        if (
            self.dataset.source is not None
            and self.phase.type == "insert"
            and self.phase.id_mode == "server"
        ):
            raise ValueError(
                "phase.idMode: server inserts would drop dataset.source's keys; use client"
            )
        if self.processes is not None and self.processes > self.threads:
            raise ValueError("processes: must not exceed threads")
        groups = None if self.phase.mix is None else groups_problem(
            self.phase.mix, self.workers_total)  # fmt: skip
        if groups is not None:
            raise ValueError(f"phase.mix.by: {groups}")
        first = self.dataset.first_record
        if self.phase.type == "mix" and first is not None and first <= self.dataset.records:
            raise ValueError(
                f"dataset.firstRecord: {first} would overwrite the loaded records 1.."
                f"{self.dataset.records}; use {self.dataset.records + 1} or more"
            )
        keys = self.key_choice
        if (
            keys.type == "hotspot"
            and self.dataset.shape in HASHED_KEY_SHAPES
            and keys.data_fraction < MIN_HASHED_FRACTION
        ):
            raise ValueError(
                f"phase.distribution.dataFraction: below {MIN_HASHED_FRACTION} with the hashed "
                f"keys of {self.dataset.shape} a hot read costs the runner about "
                f"{1 / keys.data_fraction:.0f} key hashes; use {MIN_HASHED_FRACTION} or more"
            )
        if self.phase.keys is not None and self.phase.keys > self.dataset.records:
            raise ValueError("phase.keys: must not exceed dataset.records (keys are distinct)")
        return self

    @property
    def statement_mode(self) -> StatementMode | None:
        """prepared or simple, as this step's SQL target runs them; None on MongoDB."""
        return statement_mode(self.target.engine, self.statements)

    @property
    def write_concern(self) -> WriteConcern:
        """The phase's own, else the target's durability profile (MongoDB), else
        acknowledged (the SQL engines' durability is a server setting)."""
        if self.phase.write_concern is not None:
            return self.phase.write_concern
        if self.target.engine != "mongodb" or self.target.durability is None:
            return "acknowledged"
        return DURABILITY_WRITE_CONCERN[self.target.durability]

    @property
    def key_choice(self) -> KeyChoice:
        given = self.phase.distribution
        return KeyChoice(
            type="uniform" if given is None else given.type,
            data_fraction=defaults.HOTSPOT_DATA_FRACTION
            if given is None or given.data_fraction is None
            else given.data_fraction,
            operation_fraction=self.tuning.operation_fraction,
            zipfian_constant=self.tuning.zipfian_constant,
        )

    @property
    def operations(self) -> int | None:
        """Operations over all pods (None: bounded by time or keys). An insert
        phase's `operations` are its records (`dataset.records`)."""
        return None if self.phase.type == "insert" else self.phase.operations

    @property
    def keys(self) -> int | None:
        """pointReads of distinct keys (uniform): how many (default every record)."""
        if self.phase.type != "pointReads" or not self.phase.reads_distinct_keys:
            return None
        return min(self.phase.keys or self.dataset.records, self.dataset.records)

    @property
    def queries(self) -> tuple[QueryKind, ...]:
        return self.phase.effective_queries if self.phase.type == "query" else ()

    @property
    def duration(self) -> float | None:
        """Measured seconds (warm-up excluded); None: bounded by work."""
        return None if self.phase.duration is None else self.phase.duration.seconds

    @property
    def warmup(self) -> float:
        return self.phase.warmup_seconds

    def worker_processes(self, cpu_budget: float) -> int:
        """Processes for this pod: `processes`, else one per CPU of the pod's budget
        (the GIL caps one process at one core), never more than connections."""
        if self.processes is not None:
            return self.processes
        return max(1, min(self.threads, math.ceil(cpu_budget)))

    @property
    def first_new_record(self) -> int:
        """The number of the first record this phase inserts."""
        if self.dataset.first_record is not None:
            return self.dataset.first_record
        return 1 if self.phase.type == "insert" else self.dataset.records + 1

    @property
    def loads_source(self) -> bool:
        """This step loads the records of `dataset.source`'s files: the table's first
        insert (records from 1 on), with runner-made keys; later inserts generate."""
        return (
            self.dataset.source is not None
            and self.phase.type == "insert"
            and self.phase.id_mode == "client"
            and self.first_new_record == 1
        )

    @property
    def records_before(self) -> int:
        """Records in the table before this phase (the base of storage samples' count)."""
        if self.dataset.records_before is not None:
            return self.dataset.records_before
        return 0 if self.phase.type == "insert" else self.dataset.records

    @property
    def workers_total(self) -> int:
        """Connections over all pods: the unit the key space is split by."""
        return self.pod.count * self.threads

    @property
    def connection_groups(self) -> dict[str, int]:
        """Thread groups (mix.by connections): each operation type's connections
        over all pods; {} when every connection draws every type."""
        mix = self.phase.mix
        if mix is None or mix.by != "connections":
            return {}
        return group_sizes(mix, self.workers_total)


def describe_error(loc: tuple[int | str, ...], message: str) -> str:
    """'phase' + 'Value error, mix: required' -> 'phase.mix: required'."""
    message = message.removeprefix("Value error, ")
    path = ".".join(str(p) for p in loc)
    if _FIELD_PREFIX.match(message):
        return f"{path}.{message}" if path else message
    return f"{path or '(top level)'}: {message}"
