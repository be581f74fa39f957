"""The step file: what one runner Job does (one target, one data set, one phase).

The operator writes it (``dbbench_operator.specs.runner_job``) into a ConfigMap
that every pod of the step's Job mounts; the runner reads it
(``dbbench_runner.config``). Field names are the BenchmarkRun CRD's, so a
phase's fields read the same in both. Cross-field checks here repeat what
admission already enforced, for step files written by hand.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

from pydantic import AwareDatetime, Field, model_validator

from dbbench_contract import defaults
from dbbench_contract.durations import parse_duration
from dbbench_contract.wire import WireModel

Engine = Literal["mongodb", "mysql", "mariadb", "postgresql"]
Shape = Literal["flat45", "indexed4", "news", "vehicle", "ycsb"]
PhaseType = Literal["insert", "mix", "query", "pointReads"]
WriteConcern = Literal["unacknowledged", "acknowledged", "journaled", "majority"]
QueryName = Literal["indexedEquality", "twoFieldProjection", "sortSkip", "scan100"]
ReadPreference = Literal["primary", "secondaryPreferred", "nearest"]
IdMode = Literal["client", "server"]
DistributionType = Literal["uniform", "zipfian", "latest", "hotspot"]
# The client library of the MySQL/MariaDB driver.
MySQLDriverName = Literal["mysqlclient", "mysql-connector-python"]
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
# Shapes whose keys are hashes of the record number: a hot range of keys is
# found by rejection (distributions.py), ~1/dataFraction hashes per hot read.
HASHED_KEY_SHAPES = ("flat45", "ycsb")
MIN_HASHED_FRACTION = 0.05
_FIELD_PREFIX = re.compile(r"^([A-Za-z][\w.]*): ")


class Endpoint(WireModel):
    host: str
    port: int = Field(ge=1, le=65535)


class Target(WireModel):
    """Where the database is and how to log in (the password only by file)."""

    name: str = Field(min_length=1)
    engine: Engine
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


class Dataset(WireModel):
    shape: Shape
    # insert: the records this phase loads; other phases: the loaded set keys are drawn from.
    records: int = Field(ge=1)
    record_size: int = Field(
        default=defaults.RECORD_SIZE, ge=defaults.MIN_RECORD_SIZE, le=defaults.MAX_RECORD_SIZE
    )
    seed: int = defaults.SEED
    # Records the table holds before this phase (storage samples add what the
    # phase writes to it). Unset: 0 for insert phases, `records` otherwise.
    records_before: int | None = Field(default=None, ge=0)
    # Number of the first record this phase inserts: after the highest number
    # any earlier phase wrote, so client-numbered keys never collide. Unset: 1
    # for insert phases, records + 1 otherwise.
    first_record: int | None = Field(default=None, ge=1)
    # news only: index the Tags (MongoDB multikey / MySQL news_tags.tag) or not.
    tags_index: bool = True

    @model_validator(mode="after")
    def _tags_for_news(self) -> Dataset:
        if not self.tags_index and self.shape != "news":
            raise ValueError("tagsIndex: only the news shape has Tags; remove tagsIndex")
        return self


class Mix(WireModel):
    read: float = Field(default=0, ge=0)
    insert: float = Field(default=0, ge=0)
    update: float = Field(default=0, ge=0)
    scan: float = Field(default=0, ge=0)
    read_modify_write: float = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _positive(self) -> Mix:
        if self.read + self.insert + self.update + self.scan + self.read_modify_write <= 0:
            raise ValueError("read: the mix proportions must add up to more than 0")
        return self


class Distribution(WireModel):
    type: DistributionType = "uniform"
    # hotspot: the hot set is the lowest dataFraction of the key order (the
    # table's clustered order: record numbers for int keys, the hashes for
    # flat45 and ycsb) and receives operationFraction of the operations (1.0:
    # only the hot set is read).
    data_fraction: float = Field(default=defaults.HOTSPOT_DATA_FRACTION, gt=0, le=1)
    operation_fraction: float = Field(default=defaults.HOTSPOT_OPERATION_FRACTION, ge=0, le=1)
    zipfian_constant: float = Field(default=defaults.ZIPFIAN_CONSTANT, gt=0, lt=1)


class Phase(WireModel):
    name: str = Field(min_length=1)
    type: PhaseType
    id_mode: IdMode = "client"
    batch_size: int = Field(default=defaults.BATCH_SIZE, ge=1, le=100_000)
    write_concern: WriteConcern = "acknowledged"
    report_every: int = Field(default=defaults.REPORT_EVERY, ge=1)
    mix: Mix | None = None
    distribution: Distribution = Distribution()
    # Seconds; the file may give the CRD's form (`90s`, `1h30m`).
    duration: float | None = None
    operations: int | None = Field(default=None, ge=1)
    target_rate: float = Field(default=0, ge=0)
    warmup: float = 0
    read_preference: ReadPreference = "primary"
    queries: tuple[QueryName, ...] = ()
    keys: int | None = Field(default=None, ge=1)
    scan_length: int = Field(default=defaults.SCAN_LENGTH, ge=1, le=10_000)
    max_error_rate: float = Field(default=defaults.MAX_ERROR_RATE, ge=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _durations(cls, data: object) -> object:
        if isinstance(data, dict):
            for key in ("duration", "warmup"):
                if isinstance(data.get(key), str):
                    try:
                        data = {**data, key: parse_duration(data[key])}
                    except ValueError as exc:
                        raise ValueError(f"{key}: {exc}") from exc
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Phase:
        if self.type == "mix" and self.mix is None:
            raise ValueError("mix: required when type is mix")
        if self.type == "query" and not self.queries:
            raise ValueError("queries: required when type is query")
        self._point_reads()
        if self.type == "query" and self.distribution.type == "latest":
            raise ValueError(
                "distribution.type: latest has no meaning for query (its values are Number "
                "values, not records); use uniform, zipfian or hotspot"
            )
        if self.type in ("mix", "query") and self.duration is None and self.operations is None:
            raise ValueError("duration: give duration or operations for mix and query phases")
        if self.type == "insert" and self.warmup > 0:
            raise ValueError("warmup: not allowed for insert phases (every record counts)")
        if self.duration is not None and self.duration <= 0:
            raise ValueError("duration: must be positive")
        if self.warmup < 0:
            raise ValueError("warmup: must not be negative")
        return self

    @property
    def writes_records(self) -> bool:
        """Insert phases, and mixes with an insert share: their record counts are
        shown even when 0; every other phase writes no record (no count shown)."""
        return self.type == "insert" or (
            self.type == "mix" and self.mix is not None and self.mix.insert > 0
        )

    def _point_reads(self) -> None:
        """uniform: `keys` distinct keys, each read once per pass; other
        distributions: independent draws, bounded by duration or operations."""
        if self.type != "pointReads":
            return
        if self.distribution.type == "uniform":
            if self.keys is None:
                raise ValueError("keys: required when type is pointReads (distribution uniform)")
            return
        if self.keys is not None:
            raise ValueError(
                f"keys: only with distribution uniform; {self.distribution.type} reads draw "
                "from every record: bound them with duration or operations"
            )
        if self.duration is None and self.operations is None:
            raise ValueError(
                f"duration: give duration or operations for {self.distribution.type} point reads"
            )


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
    dataset: Dataset
    phase: Phase
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
    progress_every: float = Field(default=5.0, gt=0)
    storage_every: float = Field(default=10.0, gt=0)
    # When the step's Job ends (its creation plus activeDeadlineSeconds, UTC):
    # pods retry their uploads until shortly before it, so a results service
    # that restarts or is busy costs time, not results. None (a step file
    # written by hand): the runner's own budget (10 minutes, uploading.py).
    job_deadline: AwareDatetime | None = None

    @model_validator(mode="after")
    def _engine_rules(self) -> StepConfig:
        if self.target.engine != "mongodb" and self.phase.write_concern != "acknowledged":
            raise ValueError(
                f"phase.writeConcern: {self.phase.write_concern} has no per-statement "
                f"equivalent on {self.target.engine}; durability is a server setting "
                "(target durability profile), use acknowledged"
            )
        if self.phase.type == "query" and self.dataset.shape != "indexed4":
            raise ValueError("phase.queries: the query workload needs dataset.shape indexed4")
        if self.processes is not None and self.processes > self.threads:
            raise ValueError("processes: must not exceed threads")
        first = self.dataset.first_record
        if self.phase.type == "mix" and first is not None and first <= self.dataset.records:
            raise ValueError(
                f"dataset.firstRecord: {first} would overwrite the loaded records 1.."
                f"{self.dataset.records}; use {self.dataset.records + 1} or more"
            )
        distribution = self.phase.distribution
        if (
            distribution.type == "hotspot"
            and self.dataset.shape in HASHED_KEY_SHAPES
            and distribution.data_fraction < MIN_HASHED_FRACTION
        ):
            raise ValueError(
                f"phase.distribution.dataFraction: below {MIN_HASHED_FRACTION} with the hashed "
                f"keys of {self.dataset.shape} a hot read costs the runner about "
                f"{1 / distribution.data_fraction:.0f} key hashes; use {MIN_HASHED_FRACTION} "
                "or more"
            )
        keys = self.phase.keys
        if keys is not None and keys > self.dataset.records:
            raise ValueError("phase.keys: must not exceed dataset.records (keys are distinct)")
        return self

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
    def records_before(self) -> int:
        """Records in the table before this phase (the base of storage samples' count)."""
        if self.dataset.records_before is not None:
            return self.dataset.records_before
        return 0 if self.phase.type == "insert" else self.dataset.records

    @property
    def workers_total(self) -> int:
        """Connections over all pods: the unit the key space is split by."""
        return self.pod.count * self.threads


def describe_error(loc: tuple[int | str, ...], message: str) -> str:
    """'phase' + 'Value error, mix: required' -> 'phase.mix: required'."""
    message = message.removeprefix("Value error, ")
    path = ".".join(str(p) for p in loc)
    if _FIELD_PREFIX.match(message):
        return f"{path}.{message}" if path else message
    return f"{path or '(top level)'}: {message}"
