"""The step description a runner pod executes: one target, one data set, one phase.

Field names in the file are the BenchmarkRun CRD's (camelCase aliases of the
snake_case attributes) so the operator can copy its spec through unchanged.
The file is parsed once, here, into frozen models; nothing below this module
touches raw dicts.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

Engine = Literal["mongodb", "mysql", "mariadb"]
Shape = Literal["flat45", "indexed4", "news", "vehicle", "ycsb"]
PhaseType = Literal["insert", "mix", "query", "pointReads"]
WriteConcern = Literal["unacknowledged", "acknowledged", "journaled", "majority"]
QueryName = Literal["indexedEquality", "twoFieldProjection", "sortSkip", "scan100"]
ReadPreference = Literal["primary", "secondaryPreferred", "nearest"]
# The client library of the MySQL/MariaDB driver (drivers/mysql_clients.py).
MySQLDriverName = Literal["mysqlclient", "mysql-connector-python"]

# Shapes whose keys are hashes of the record number: a hot range of keys is
# found by rejection (distributions.py), ~1/dataFraction hashes per hot read.
HASHED_KEY_SHAPES = ("flat45", "ycsb")
MIN_HASHED_FRACTION = 0.05

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class ConfigError(Exception):
    """Invalid step configuration; the message names the offending field."""


def parse_duration(text: str | float | int) -> float:
    """'5m' -> 300.0; bare numbers are seconds."""
    if isinstance(text, int | float):
        return float(text)
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (use e.g. 30s, 5m, 1h)")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]


class _Model(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class Endpoint(_Model):
    host: str
    port: int = Field(ge=1, le=65535)


class Target(_Model):
    name: str = Field(min_length=1)
    engine: Engine
    uri: str | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    password_file: Path | None = None
    password: str | None = None
    database: str = Field(default="dbbench", pattern=_IDENTIFIER)
    # Sharded MongoDB: the key the operator sharded the collection on (recorded only).
    shard_key: str | None = Field(default=None, max_length=256)
    # Read replicas for readPreference != primary on MySQL/MariaDB (MongoDB
    # routes reads itself from the URI's replica set).
    replicas: tuple[Endpoint, ...] = ()
    connect_retries: int = Field(default=5, ge=1, le=100)
    connect_timeout: float = Field(default=5.0, gt=0)

    # A file holding the URI (a mounted Secret): mongodb://... for mongodb,
    # mysql:// or mariadb:// (user, password, host, port, database) otherwise.
    uri_file: Path | None = None

    @model_validator(mode="after")
    def _one_address(self) -> Target:
        given = [self.uri is not None, self.uri_file is not None, self.host is not None]
        if sum(given) != 1:
            raise ValueError("uri: give exactly one of uri, uriFile or host")
        if self.uri is not None and self.engine != "mongodb":
            raise ValueError("uri: only for mongodb; use host/port/user for mysql and mariadb")
        return self

    def resolved(self) -> Target:
        """The target with `uriFile` read and, for MySQL-family URIs, split into fields."""
        if self.uri_file is None:
            return self
        try:
            uri = self.uri_file.read_text().strip()
        except OSError as exc:
            raise ValueError(f"uriFile: cannot read {self.uri_file}: {exc.strerror}") from exc
        fields: dict[str, object] = {"uri_file": None}
        if self.engine == "mongodb":
            fields["uri"] = uri
        else:
            fields.update(parse_mysql_uri(uri))
        return self.model_copy(update=fields)

    def secret(self) -> str | None:
        """The password, read from passwordFile when given (a mounted Secret)."""
        if self.password_file is not None:
            return self.password_file.read_text().strip()
        return self.password


def parse_mysql_uri(uri: str) -> dict[str, object]:
    """mysql://user:password@host:port/database -> Target fields (password never logged)."""
    parts = urlsplit(uri)
    if parts.scheme not in ("mysql", "mariadb") or not parts.hostname:
        raise ValueError(
            "uriFile: a MySQL/MariaDB URI looks like mysql://user:password@host:3306/db"
        )
    fields: dict[str, object] = {"host": parts.hostname, "port": parts.port or 3306}
    if parts.username:
        fields["user"] = unquote(parts.username)
    if parts.password is not None:
        fields["password"] = unquote(parts.password)
    database = parts.path.lstrip("/")
    if database:
        fields["database"] = database
    return fields


class Dataset(_Model):
    shape: Shape
    # insert: the records this phase loads; other phases: the loaded set keys are drawn from.
    records: int = Field(ge=1)
    record_size: int = Field(default=1024, ge=128, le=1_048_576)
    seed: int = 42
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


class Mix(_Model):
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


class Distribution(_Model):
    type: Literal["uniform", "zipfian", "latest", "hotspot"] = "uniform"
    # hotspot: the hot set is the lowest dataFraction of the key order (the
    # table's clustered order: record numbers for int keys, the hashes for
    # flat45 and ycsb) and receives operationFraction of the operations (1.0:
    # only the hot set is read).
    data_fraction: float = Field(default=0.1, gt=0, le=1)
    operation_fraction: float = Field(default=1.0, ge=0, le=1)
    zipfian_constant: float = Field(default=0.99, gt=0, lt=1)


class Phase(_Model):
    name: str = Field(min_length=1)
    type: PhaseType
    id_mode: Literal["client", "server"] = "client"
    batch_size: int = Field(default=1, ge=1, le=100_000)
    write_concern: WriteConcern = "acknowledged"
    report_every: int = Field(default=100_000, ge=1)
    mix: Mix | None = None
    distribution: Distribution = Distribution()
    duration: float | None = None
    operations: int | None = Field(default=None, ge=1)
    target_rate: float = Field(default=0, ge=0)
    warmup: float = 0
    read_preference: ReadPreference = "primary"
    queries: tuple[QueryName, ...] = ()
    keys: int | None = Field(default=None, ge=1)
    scan_length: int = Field(default=100, ge=1, le=10_000)
    max_error_rate: float = Field(default=0.01, ge=0, le=1)

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


class Pod(_Model):
    index: int = Field(default=0, ge=0)
    count: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _in_range(self) -> Pod:
        if self.index >= self.count:
            raise ValueError("index: must be less than count")
        return self


class StepConfig(_Model):
    target: Target
    dataset: Dataset
    phase: Phase
    pod: Pod = Pod()
    threads: int = Field(default=1, ge=1, le=4096)
    processes: int | None = Field(default=None, ge=1, le=256)
    # Ignored for MongoDB. mysqlclient spends ~1/5 of the connector's CPU per call.
    mysql_driver: MySQLDriverName = "mysqlclient"
    progress_every: float = Field(default=5.0, gt=0)
    storage_every: float = Field(default=10.0, gt=0)
    # Which step of the run this is: the phase's index in spec.phases and the
    # repeat (1-based). They seed the operation streams and stamp the writes
    # (keyspace.step_position), so repeats and phases never replay each other's
    # operations or values.
    phase_index: int = Field(default=0, ge=0, le=1023)
    repeat: int = Field(default=1, ge=1, le=1024)

    @model_validator(mode="after")
    def _engine_rules(self) -> StepConfig:
        relational = self.target.engine != "mongodb"
        if relational and self.phase.write_concern != "acknowledged":
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


_FIELD_PREFIX = re.compile(r"^([A-Za-z][\w.]*): ")


def _describe(loc: tuple[int | str, ...], message: str) -> str:
    """'phase' + 'Value error, mix: required' -> 'phase.mix: required'."""
    message = message.removeprefix("Value error, ")
    path = ".".join(str(p) for p in loc)
    if _FIELD_PREFIX.match(message):
        return f"{path}.{message}" if path else message
    return f"{path or '(top level)'}: {message}"


def load_config(path: Path, pod_index: int | None = None) -> StepConfig:
    """Read and validate a step file; every failure becomes a ConfigError naming the field.

    `pod_index` overrides `pod.index` (a Kubernetes Indexed Job gives each pod
    its index in JOB_COMPLETION_INDEX; the step file is shared by all pods).
    """
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    if pod_index is not None and isinstance(raw, dict):
        raw = {**raw, "pod": {**(raw.get("pod") or {}), "index": pod_index}}
    config = parse_config(raw)
    try:
        target = config.target.resolved()
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"invalid config:\n  target.{exc}") from exc
    return config.model_copy(update={"target": target})


def parse_config(raw: object) -> StepConfig:
    if not isinstance(raw, dict):
        raise ConfigError("(top level): the config must be a mapping")
    try:
        return StepConfig.model_validate(raw)
    except ValidationError as exc:
        lines = [_describe(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines)) from exc
