"""``BenchmarkRun.spec``: the root model and ``parse_spec``, the one place a raw
spec becomes typed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict
from pydantic_core import ErrorDetails

from dbbench_contract import defaults
from dbbench_contract.durations import DURATION_PATTERN, Duration

from .base import (
    DUPLICATE_VALUE,
    ApiModel,
    Problem,
    Rule,
    SpecError,
    refuse_duplicates,
    wire_default,
)
from .expectations import SPEC_RULES as EXPECTATION_RULES
from .expectations import Expectation
from .growth import SPEC_RULES as GROWTH_RULES
from .phases import Phase
from .placement import Hardware, Runner
from .sources import DATASET_RULES as SOURCE_DATASET_RULES
from .sources import SPEC_RULES as SOURCE_SPEC_RULES
from .sources import DataSource
from .statements import STATEMENT_RULES
from .targets import Target

Shape = Literal["flat45", "indexed4", "news", "vehicle", "ycsb"]
_MAP_LIST: JsonDict = {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}


class Dataset(ApiModel):
    """The records every target is loaded with, generated deterministically from
    `seed`: every runner pod and every repeat can regenerate any record; or read
    from files (`source`)."""

    shape: Shape = Field(
        default="flat45",
        description=(
            "Record layout. flat45: about 45 fields, one the md5 hex of the record number "
            "(the key), the rest constant. indexed4: Number, Number1, Date (indexed) and a "
            "Data filler; the shape the `query` phase's queries are defined on. news: news "
            "items with indexed ID, CategoryID, CreateTime, UserID and a Tags array. vehicle: "
            "vehicle-inspection tests with 0-8 failure items (field benchmark 4); reads fetch "
            "a vehicle's latest test (14 joined tables in MySQL/MariaDB, one document in "
            "MongoDB), updates change Mileage. ycsb: YCSB usertable (key + field0..field9). "
            "Default flat45."
        ),
    )
    records: int = Field(
        default=1_000_000,
        ge=1,
        le=100_000_000_000,
        description=(
            "Number of records in the data set: what an insert phase loads unless it sets "
            "`operations`, and the key range of reads when the run loads nothing itself (reads "
            "draw keys from every record the run has loaded into their table so far). "
            "Default 1000000."
        ),
    )
    record_size: int = Field(
        default=defaults.RECORD_SIZE,
        ge=defaults.MIN_RECORD_SIZE,
        le=defaults.MAX_RECORD_SIZE,
        description=(
            "Approximate size of one record in bytes (default 1024), reached by the filler "
            "field of flat45, indexed4 and ycsb; news and vehicle records keep their natural "
            "size."
        ),
    )
    seed: int = Field(
        default=defaults.SEED,
        ge=0,
        le=2**62,
        description="Seed of the data and key generators; same seed, same records and keys.",
    )
    tags_index: bool = Field(
        default=True,
        description=(
            "news only: index the Tags (a multikey index in MongoDB, an index on "
            "news_tags.tag in MySQL/MariaDB). Field benchmark 5 loads with and without it. "
            "Default true."
        ),
    )
    source: DataSource | None = Field(
        default=None,
        description=(
            "Load the records from CSV or JSON Lines files on a PersistentVolumeClaim "
            "instead of generating them: the first insert phase loads every row, "
            "`records` must be the files' row count (the step fails otherwise, saying "
            "how many rows the files hold), and the phases after it read the keys the "
            "files gave (1..records). Later inserts (mix, or an insert phase with "
            "operations) add generated records past them. Unset: generated from seed."
        ),
    )

    RULES = (
        Rule(
            cel="self.tagsIndex || self.shape == 'news'",
            message="tagsIndex: only the news shape has Tags; remove tagsIndex or use shape news",
            field="tagsIndex",
            holds=lambda d: d.tags_index or d.shape == "news",
        ),
        *SOURCE_DATASET_RULES,
    )

    @property
    def approximate_record_bytes(self) -> int:
        """Payload bytes of one record: recordSize, or the shape's natural size."""
        return NATURAL_RECORD_BYTES.get(self.shape, self.record_size)

    @property
    def collection(self) -> str:
        """The table/collection the runner loads this shape into (its `table`)."""
        return DATASET_COLLECTIONS[self.shape]


# The runner's table name per shape (tests/unit/contract/api checks them against the runner).
DATASET_COLLECTIONS = {
    "flat45": "flat45",
    "indexed4": "indexed4",
    "news": "news",
    "vehicle": "vehicle_test",
    "ycsb": "usertable",
}
# Shapes whose keys are hashes of the record number (a hot range of keys is
# found by rejection, about 1/dataFraction hashes per read: the runner's
# distributions.py) and the smallest hotspot fraction admitted for them.
HASHED_KEY_SHAPES = ("flat45", "ycsb")
MIN_HASHED_FRACTION = 0.05
# Shapes whose records have a size of their own (recordSize does not apply):
# vehicle's documents average about 1,260 bytes (the runner's tests check it).
NATURAL_RECORD_BYTES = {"vehicle": 1260}
# The database the runner uses unless told otherwise.
BENCHMARK_DATABASE = "dbbench"


class Results(ApiModel):
    """Where the full results go."""

    claim_name: str = Field(
        default="dbbench-results",
        min_length=1,
        max_length=253,
        description=(
            "PersistentVolumeClaim, in the operator's namespace, owned by the results "
            "service; results land under <claim>/<namespace>/<run>/<uid>/. It must be the "
            "claim of the operator's results service (chart value results.claimName; a run "
            "naming another is refused). Default dbbench-results (the chart's default)."
        ),
    )


class BenchmarkRunSpec(ApiModel):
    """A reproducible benchmark: load `dataset` into each of `targets` in turn, on
    `hardware`, and run `phases` against it from `runner` pods."""

    targets: list[Target] = Field(
        min_length=1,
        max_length=8,
        description=(
            "Databases under test, benchmarked one after another with the same data and "
            "phases, on spec.hardware unless a target sets its own. Names must be unique."
        ),
        json_schema_extra=_MAP_LIST,
    )
    hardware: Hardware = Field(
        default_factory=Hardware,
        description=(
            "Where the databases run and with what resources; a target's own `hardware` "
            "overrides it field by field."
        ),
        json_schema_extra=wire_default(Hardware),
    )
    runner: Runner = Field(
        default_factory=Runner,
        description="The load-generating pods (default: 1 pod, 1 connection).",
        json_schema_extra=wire_default(Runner),
    )
    dataset: Dataset = Field(
        default_factory=Dataset,
        description="The generated records (default: 1000000 flat45 records of 1 KiB, seed 42).",
        json_schema_extra=wire_default(Dataset),
    )
    phases: list[Phase] = Field(
        min_length=1,
        max_length=32,
        description="Steps run in order against each target. Names must be unique.",
        json_schema_extra=_MAP_LIST,
    )
    cache: Literal["warm", "cold", "coldOnce"] = Field(
        default="warm",
        description=(
            "warm (default): phases follow each other on a running database. cold: restart "
            "the database and drop the node's page cache before each measured (non-insert) "
            "step, every repeat included, so reads come from disk. coldOnce: do that once per "
            "target, before its first measured step, then run every later phase and repeat "
            "on the running database (field benchmark 5: restart once, then run the "
            "operations three times). cold and coldOnce need deployed (not external) targets "
            "and exclusive nodes. Each step's environment.json records when its server started "
            "(server.startedAt), and the report shows which steps followed a restart."
        ),
    )
    repeats: int = Field(
        default=1,
        ge=1,
        le=100,
        description=(
            "How many times each non-insert phase runs back to back, without restart in "
            "between (unless cache: cold); each repeat is reported separately (e.g. to see "
            "caches warm up). Insert phases run once: they define the data set. Default 1."
        ),
    )
    timeout: Duration = Field(
        default=Duration.parse("2h"),
        description=(
            "Wall-clock limit of the whole run (e.g. 2h, 90m); the run fails when it is "
            "exceeded. Must exceed the planned phase time. Default 2h."
        ),
    )
    startup_grace: Duration = Field(
        default=Duration.parse("5m"),
        description=(
            "How long a database or runner pod may wait to start (be scheduled, get its "
            "image, run and, for databases, pass its readiness probe) before the run fails "
            "with the pod's own reason: Unschedulable, ErrImagePull, ImagePullBackOff, "
            "ErrImageNeverPull, CrashLoopBackOff, ReadinessProbeFailed, FailedCreate, ... "
            "Counted per pod from when it was created or last stopped being ready. While "
            "it waits, the run's conditions and Warning events carry that reason and the "
            "pod's message. Raise it for slow image pulls or long database recovery; "
            "spec.timeout still bounds the whole run. Default 5m."
        ),
    )
    cleanup: Literal["Delete", "Retain"] = Field(
        default="Delete",
        description=(
            "Delete (default): remove the deployed databases after the run. Retain: keep "
            "them for inspection (they are still deleted with the BenchmarkRun)."
        ),
    )
    results: Results = Field(
        default_factory=Results,
        description="Where the full results are written.",
        json_schema_extra=wire_default(Results),
    )
    expectations: list[Expectation] | None = Field(
        default=None,
        min_length=1,
        max_length=16,
        description=(
            "What the run must reach, per phase (and target, operation type): ops/s, latency "
            "percentiles, error rate, a tolerance against the series' recent runs. Judged "
            "when the last step is collected: the Expectations condition and "
            "status.expectations say which held and by how much; a missed one with onMiss: "
            "Fail (the default) fails the run with reason ExpectationsMissed."
        ),
    )

    RULES = (
        Rule(
            cel=(
                "!self.phases.exists(p, has(p.writeConcern) && p.writeConcern == 'unacknowledged')"
                " || self.targets.all(t, t.engine == 'mongodb')"
            ),
            message=(
                "phases[].writeConcern: unacknowledged is MongoDB-only (w:0) and this run has "
                "mysql, mariadb or postgresql targets; use acknowledged or split the run"
            ),
            field="phases",
            holds=lambda s: (
                all(t.engine == "mongodb" for t in s.targets)
                or all(p.write_concern != "unacknowledged" for p in s.phases)
            ),
        ),
        Rule(
            cel="self.dataset.shape == 'indexed4' || !self.phases.exists(p, p.type == 'query')",
            message=(
                "phases[].type: query runs field benchmark 2's queries, defined on the indexed4 "
                "shape; use dataset.shape indexed4 or another phase type (vehicle and news "
                "reads are type mix or pointReads)"
            ),
            field="phases",
            holds=lambda s: (
                s.dataset.shape == "indexed4" or all(p.type != "query" for p in s.phases)
            ),
        ),
        Rule(
            cel=(
                "self.dataset.shape != 'flat45' || "
                "self.phases.all(p, p.type == 'insert' || p.idMode == 'client')"
            ),
            message=(
                "phases[].idMode: server with a reading phase on flat45 would scan the table "
                "(its server-keyed table has no index on md5, as field benchmark 1's mode d); "
                "read the client-keyed table (idMode: client) instead"
            ),
            field="phases",
            holds=lambda s: (
                s.dataset.shape != "flat45"
                or all(p.type == "insert" or p.id_mode == "client" for p in s.phases)
            ),
        ),
        Rule(
            cel=(
                "!(self.dataset.shape in ['flat45', 'ycsb']) || self.phases.all(p, "
                "!has(p.distribution) || !has(p.distribution.dataFraction) "
                f"|| p.distribution.dataFraction >= {MIN_HASHED_FRACTION})"
            ),
            message=(
                f"phases[].distribution.dataFraction: below {MIN_HASHED_FRACTION} with the "
                "hashed keys of flat45 and ycsb (the hot set is the lowest keys, found by "
                "hashing about 1/dataFraction record numbers per read, which would load the "
                f"runner more than the database): use {MIN_HASHED_FRACTION} or more, or an "
                "int-keyed shape (indexed4, news, vehicle)"
            ),
            field="phases",
            holds=lambda s: (
                s.dataset.shape not in HASHED_KEY_SHAPES
                or all(
                    p.distribution is None
                    or p.distribution.data_fraction is None
                    or p.distribution.data_fraction >= MIN_HASHED_FRACTION
                    for p in s.phases
                )
            ),
        ),
        Rule(
            cel="self.cache == 'warm' || self.targets.all(t, !has(t.external))",
            message=(
                "cache: cold and coldOnce restart the databases, which is impossible for "
                "external targets; use cache: warm or remove the external targets"
            ),
            field="cache",
            holds=lambda s: not s.restarts_databases or all(t.external is None for t in s.targets),
        ),
        Rule(
            cel=(
                "!has(self.runner.processes) || "
                "self.phases.all(p, !has(p.threads) || p.threads % self.runner.processes == 0)"
            ),
            message="phases[].threads must be a multiple of runner.processes",
            field="phases",
            holds=lambda s: (
                s.runner.processes is None
                or all(p.threads is None or p.threads % s.runner.processes == 0 for p in s.phases)
            ),
        ),
        Rule(
            cel=(
                "!self.timeout.matches(DURATION_RE) || duration(self.timeout) > duration('0s')"
            ).replace("DURATION_RE", repr(DURATION_PATTERN)),
            message="timeout must be longer than 0s",
            field="timeout",
            holds=lambda s: s.timeout.seconds > 0,
        ),
        Rule(
            cel=(
                "!self.startupGrace.matches(DURATION_RE) || "
                "duration(self.startupGrace) > duration('0s')"
            ).replace("DURATION_RE", repr(DURATION_PATTERN)),
            message="startupGrace must be longer than 0s, e.g. 5m",
            field="startupGrace",
            holds=lambda s: s.startup_grace.seconds > 0,
        ),
        *STATEMENT_RULES,
        *GROWTH_RULES,
        *SOURCE_SPEC_RULES,
        *EXPECTATION_RULES,
    )

    @property
    def restarts_databases(self) -> bool:
        """cache: cold or coldOnce: the operator restarts the databases and drops their
        nodes' page cache (before every measured step, or once per target)."""
        return self.cache != "warm"

    def hardware_of(self, target: Target) -> Hardware:
        """The hardware `target`'s databases run on: the run's, with each field the
        target's own `hardware` sets replacing the run's whole."""
        return self.hardware.overridden_by(target.hardware)

    def hardware_path(self, index: int, name: str) -> str:
        """Wire path of the hardware field (Python name) in force for targets[index]:
        the target's own when it sets it, else the run's."""
        own = self.targets[index].hardware
        if own is not None and getattr(own, name, None) is not None:
            return f"spec.targets[{index}].hardware.{to_camel(name)}"
        return f"spec.hardware.{to_camel(name)}"

    @field_validator("targets", "phases")
    @classmethod
    def _names_unique(cls, items: list[Any]) -> list[Any]:
        # The API server enforces this through x-kubernetes-list-type: map.
        refuse_duplicates([item.name for item in items], lambda name: f'{{"name":"{name}"}}')
        return items


def _loc_path(loc: tuple[int | str, ...]) -> str:
    path = "spec"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def schema_problem(error: ErrorDetails) -> Problem:
    """A pydantic error worded as the API server words the same refusal."""
    loc = tuple(error["loc"])
    if error["type"] == DUPLICATE_VALUE:
        loc = (*loc, int(error.get("ctx", {})["index"]))
    field = _loc_path(loc)
    if error["type"] == "extra_forbidden":
        return Problem(field=field, message=f'unknown field "{field}"')
    return Problem(field=field, message=error["msg"])


def _models(model: BaseModel, path: str) -> Iterator[tuple[BaseModel, str]]:
    """Every model in the tree with its wire path, parents first."""
    yield model, path
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        child = f"{path}.{info.alias or name}"
        if isinstance(value, BaseModel):
            yield from _models(value, child)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _models(item, f"{child}[{index}]")


def broken_rules(spec: BenchmarkRunSpec) -> Iterator[tuple[Rule, BaseModel, str]]:
    """Each cross-field rule (the CRD's CEL rules, evaluated in Python) that
    fails, with the object it fails on and that object's wire path."""
    for model, path in _models(spec, "spec"):
        for rule in getattr(type(model), "RULES", ()):
            if not rule.holds(model):
                yield rule, model, path


def rule_problems(spec: BenchmarkRunSpec) -> list[Problem]:
    """The cross-field rules' refusals, worded as the API server words them."""
    return [
        Problem(
            field=f"{path}.{rule.field}" if rule.field else path,
            message=rule.message_for(model),
        )
        for rule, model, path in broken_rules(spec)
    ]


def parse_spec(body_spec: Mapping[str, Any]) -> BenchmarkRunSpec:
    """Parse a BenchmarkRun's ``spec`` (camelCase, as stored) into typed models.

    Applies the schema and the same cross-field rules as the CRD; raises
    ``SpecError`` whose ``problems`` name each offending field.
    """
    if not isinstance(body_spec, Mapping):
        raise SpecError([Problem(field="spec", message="must be an object")])
    try:
        spec = BenchmarkRunSpec.model_validate(dict(body_spec))
    except ValidationError as exc:
        raise SpecError([schema_problem(e) for e in exc.errors()]) from exc
    problems = rule_problems(spec)
    if problems:
        raise SpecError(problems)
    return spec
