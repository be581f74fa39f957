"""``spec.phases[]``: what the runner does to each target, in order."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from dbbench_contract import defaults
from dbbench_contract.durations import DURATION_EXAMPLES, DURATION_PATTERN, Duration

from .base import ApiModel, Rule, refuse_duplicates
from .growth import PHASE_RULES as GROWTH_RULES
from .growth import Growth
from .mix import Mix

PhaseType = Literal["insert", "mix", "query", "pointReads"]
QueryKind = Literal["indexedEquality", "twoFieldProjection", "sortSkip", "scan100"]
IdMode = Literal["client", "server"]
WriteConcern = Literal["unacknowledged", "acknowledged", "journaled", "majority"]
ReadPreference = Literal["primary", "secondaryPreferred", "nearest"]
DistributionType = Literal["uniform", "zipfian", "latest", "hotspot"]
# The stability series' window: the one typed declaration of reportEvery (a
# phase's, and the step summary's record of the window its series were cut by).
ReportEvery = Annotated[int, Field(ge=1, le=100_000_000)]
ALL_QUERIES: tuple[QueryKind, ...] = (
    "indexedEquality",
    "twoFieldProjection",
    "sortSkip",
    "scan100",
)

DURATION_DOC = f"a duration such as {DURATION_EXAMPLES}"


class Distribution(ApiModel):
    """Which keys the operations pick (mix, pointReads, query)."""

    type: DistributionType = Field(
        default="uniform",
        description=(
            "uniform (default): every key equally likely; pointReads read `keys` distinct keys, "
            "each once per pass. zipfian: a few keys are popular (Zipf, constant 0.99), "
            "scattered over the key range. latest: Zipf-skewed towards the newest records "
            "(the highest record numbers; a mix's own inserts first); not for query. hotspot: "
            "only the records whose keys sort in the lowest `dataFraction` of the key order, "
            "which is the table's clustered order (record numbers for int keys; the md5 or "
            "hash order for flat45 and ycsb), so the hot set is contiguous on disk in a "
            "table clustered by its key (MySQL/MariaDB idMode client). query draws Number "
            "values (0..525599) instead of records. With zipfian, latest and hotspot every "
            "pointRead draws a key anew (bound the phase with duration or operations)."
        ),
    )
    data_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description=(
            "hotspot only (and required there): the fraction of the key order hit, e.g. 0.1. "
            "flat45 and ycsb: at least 0.05 (each hot read costs the runner about "
            "1/dataFraction key hashes)."
        ),
    )

    RULES = (
        Rule(
            cel="self.type != 'hotspot' || has(self.dataFraction)",
            message="distribution.dataFraction is required with type hotspot (e.g. 0.1)",
            field="dataFraction",
            reason="FieldValueRequired",
            holds=lambda d: d.type != "hotspot" or d.data_fraction is not None,
        ),
        Rule(
            cel="self.type == 'hotspot' || !has(self.dataFraction)",
            message="distribution.dataFraction is only valid with type hotspot",
            field="dataFraction",
            reason="FieldValueForbidden",
            holds=lambda d: d.type == "hotspot" or d.data_fraction is None,
        ),
    )


class Phase(ApiModel):
    """One step of load against a target. Phases run in the listed order; every
    phase is measured and reported on its own (warm-up excluded)."""

    name: str = Field(
        min_length=1,
        max_length=30,
        pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$",
        description="Name of the phase (lowercase letters, digits, '-'); unique within the run.",
    )
    type: PhaseType = Field(
        description=(
            "insert: load `operations` new records (default: dataset.records). mix: a weighted "
            "mix of reads/inserts/updates/scans (`mix`), drawn per operation or as thread "
            "groups (`mix.by`). query: the named `queries`, each "
            "measured separately. pointReads: reads by key; uniform: from `keys` distinct "
            "keys, other distributions: a key drawn anew for every read. "
            "mix, query and pointReads need exactly one of `duration` and `operations`."
        )
    )
    id_mode: IdMode = Field(
        default="client",
        description=(
            "Who makes the key of inserted records, and so which table the phase uses. "
            "client (default): the runner supplies it (MongoDB _id, SQL PRIMARY KEY)"
            ", in <table>. server: the database does (MongoDB ObjectId; a table without "
            "a declared primary key), the key stored as an ordinary field, in "
            "<table>_serverkey. The two live apart, so one run can load both; reading phases "
            "read the table of their own idMode."
        ),
    )
    batch_size: int = Field(
        default=1,
        ge=1,
        le=10000,
        description="insert only: records per insert call (1 = one record per insert, default).",
    )
    write_concern: WriteConcern | None = Field(
        default=None,
        description=(
            "Overrides the target's durability profile for this phase's writes. "
            "unacknowledged (MongoDB w:0; not possible on mysql, mariadb, postgresql), "
            "acknowledged (w:1), journaled (w:1 j:true / flush at commit), majority "
            "(w:majority / semi-sync / a synchronous standby)."
        ),
    )
    report_every: ReportEvery = Field(
        default=defaults.REPORT_EVERY,
        description=(
            "Granularity of the stability series. Insert phases: in records, a point "
            "(records/s, ops/s, mean latency) every `reportEvery` records written, a batch "
            "crossing a window boundary split proportionally between the windows. Other "
            f"phases: in operations (database calls). Default {defaults.REPORT_EVERY}. A "
            "per-second series is always recorded too."
        ),
    )
    mix: Mix | None = Field(default=None, description="type mix only (and required there).")
    distribution: Distribution | None = Field(
        default=None,
        description="Key choice for mix, query and pointReads phases; default uniform.",
    )
    duration: Duration | None = Field(
        default=None,
        description=(
            f"Measured time, {DURATION_DOC}; excludes `warmup`. Exclusive with `operations`."
        ),
    )
    operations: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000_000_000,
        description=(
            "Operations to perform over all runner pods. insert: records to insert (default "
            "dataset.records). Other types: exclusive with `duration`."
        ),
    )
    target_rate: int = Field(
        default=0,
        ge=0,
        le=100_000_000,
        description=(
            "Operations per second over all runner pods (open loop, latencies corrected for "
            "coordinated omission). 0 (default) = closed loop, as fast as possible."
        ),
    )
    warmup: Duration | None = Field(
        default=None,
        description=(
            f"Load run before measuring, {DURATION_DOC}; not reported. Only with `duration`."
        ),
    )
    read_preference: ReadPreference = Field(
        default="primary",
        description=(
            "Where reads go: primary (default), secondaryPreferred or nearest (MongoDB read "
            "preference; for primaryReplica, reads spread to the replicas). Needs replicas."
        ),
    )
    queries: list[QueryKind] | None = Field(
        default=None,
        min_length=1,
        max_length=4,
        description=(
            "type query only: the queries to run, each measured separately. indexedEquality: "
            "equality on one indexed field, 10 records. twoFieldProjection: two indexed "
            "fields, 10 records projected to two small fields. sortSkip: one indexed field, "
            "sorted by the date index descending, skip 100, limit 10. scan100: 100 records "
            "with no condition. Default: all four."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    keys: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000_000_000,
        description=(
            "pointReads with distribution uniform (the default) only: number of distinct random "
            "keys (out of the records loaded so far) read, each once per pass (again in the "
            "same order while `duration` lasts), e.g. 10000. Default: every record. Other "
            "distributions draw every read's key from all records: not with `keys`."
        ),
    )
    threads: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description=(
            "Connections per runner pod for this phase; overrides runner.threads (e.g. "
            "single-threaded inserts, 8-thread reads). Must be a multiple of runner.processes."
        ),
    )
    max_error_rate: float = Field(
        default=defaults.MAX_ERROR_RATE,
        ge=0,
        le=1,
        description=(
            "The phase fails when errors / operations exceeds this fraction (default 0.01)."
        ),
    )
    growth: Growth | None = Field(
        default=None,
        description=(
            "insert only: load the phase's records in `steps` parts and run the phases "
            "named in `measure` after each part (reads measured as the table grows)."
        ),
    )

    RULES = (
        Rule(
            cel="self.type == 'insert' || has(self.duration) != has(self.operations)",
            message=(
                "set exactly one of duration or operations for a mix, query or pointReads phase"
            ),
            message_expression=(
                "'phase ' + self.name + ' (type ' + self.type + '): set exactly one of "
                "duration or operations'"
            ),
            describe=lambda p: (
                f"phase {p.name} (type {p.type}): set exactly one of duration or operations"
            ),
            holds=lambda p: p.type == "insert" or (p.duration is None) != (p.operations is None),
        ),
        Rule(
            cel="self.type != 'insert' || !has(self.duration)",
            message=(
                "duration is not valid for an insert phase: it inserts `operations` records "
                "(default dataset.records)"
            ),
            field="duration",
            reason="FieldValueForbidden",
            holds=lambda p: p.type != "insert" or p.duration is None,
        ),
        Rule(
            # The matches() guard leaves malformed values to the pattern's own message.
            cel=(
                "!has(self.duration) || !self.duration.matches(DURATION_RE) "
                "|| duration(self.duration) > duration('0s')"
            ).replace("DURATION_RE", repr(DURATION_PATTERN)),
            message="duration must be longer than 0s",
            field="duration",
            holds=lambda p: p.duration is None or p.duration.seconds > 0,
        ),
        Rule(
            cel="!has(self.warmup) || has(self.duration)",
            message="warmup is only valid with duration (a duration-based phase)",
            field="warmup",
            reason="FieldValueForbidden",
            holds=lambda p: p.warmup is None or p.duration is not None,
        ),
        Rule(
            cel="!has(self.queries) || self.type == 'query'",
            message="queries is only valid with type: query",
            field="queries",
            reason="FieldValueForbidden",
            holds=lambda p: p.queries is None or p.type == "query",
        ),
        Rule(
            cel="self.type != 'mix' || has(self.mix)",
            message="mix is required with type: mix (e.g. mix: {read: 85, insert: 15, update: 5})",
            field="mix",
            reason="FieldValueRequired",
            holds=lambda p: p.type != "mix" or p.mix is not None,
        ),
        Rule(
            cel="!has(self.mix) || self.type == 'mix'",
            message="mix is only valid with type: mix",
            field="mix",
            reason="FieldValueForbidden",
            holds=lambda p: p.mix is None or p.type == "mix",
        ),
        Rule(
            cel="!has(self.keys) || self.type == 'pointReads'",
            message="keys is only valid with type: pointReads",
            field="keys",
            reason="FieldValueForbidden",
            holds=lambda p: p.keys is None or p.type == "pointReads",
        ),
        Rule(
            cel="!has(self.keys) || !has(self.distribution) || self.distribution.type == 'uniform'",
            message=(
                "keys is only valid with distribution uniform (distinct keys, each read once); "
                "zipfian, latest and hotspot draw every read's key from all records: remove "
                "keys and bound the phase with duration or operations"
            ),
            field="keys",
            reason="FieldValueForbidden",
            holds=lambda p: (
                p.keys is None or p.distribution is None or p.distribution.type == "uniform"
            ),
        ),
        Rule(
            cel=(
                "self.type != 'query' || !has(self.distribution) "
                "|| self.distribution.type != 'latest'"
            ),
            message=(
                "distribution.type latest is not valid for a query phase: it draws Number "
                "values, which carry no recency; use uniform, zipfian or hotspot"
            ),
            field="distribution",
            holds=lambda p: (
                p.type != "query" or p.distribution is None or p.distribution.type != "latest"
            ),
        ),
        Rule(
            cel="self.type == 'insert' || self.batchSize == 1",
            message="batchSize is only valid with type: insert",
            field="batchSize",
            reason="FieldValueForbidden",
            holds=lambda p: p.type == "insert" or p.batch_size == 1,
        ),
        Rule(
            cel="self.type != 'insert' || !has(self.distribution)",
            message="distribution is not valid for an insert phase (inserts take new keys)",
            field="distribution",
            reason="FieldValueForbidden",
            holds=lambda p: p.type != "insert" or p.distribution is None,
        ),
        Rule(
            cel="self.type != 'insert' || self.readPreference == 'primary'",
            message="readPreference is not valid for an insert phase (writes go to the primary)",
            field="readPreference",
            reason="FieldValueForbidden",
            holds=lambda p: p.type != "insert" or p.read_preference == "primary",
        ),
        *GROWTH_RULES,
    )

    @field_validator("queries")
    @classmethod
    def _queries_unique(cls, value: list[QueryKind] | None) -> list[QueryKind] | None:
        # The API server enforces this through x-kubernetes-list-type: set.
        if value is not None:
            refuse_duplicates(list(value), lambda query: f'"{query}"')
        return value

    @property
    def measured_seconds(self) -> float:
        """Planned wall time of one repeat when duration-based (warm-up included), else 0."""
        if self.duration is None:
            return 0.0
        return self.duration.seconds + self.warmup_seconds

    @property
    def warmup_seconds(self) -> float:
        """Seconds of load run before measuring (0 without a warm-up)."""
        return 0.0 if self.warmup is None else self.warmup.seconds

    @property
    def writes_records(self) -> bool:
        """Insert phases, and mixes with an insert share: their record counts are
        shown even when 0; every other phase writes no record (no count shown)."""
        return self.type == "insert" or (
            self.type == "mix" and self.mix is not None and self.mix.insert > 0
        )

    @property
    def reads_distinct_keys(self) -> bool:
        """pointReads of `keys` distinct keys (uniform), not draws from a distribution."""
        return self.distribution is None or self.distribution.type == "uniform"

    @property
    def effective_queries(self) -> tuple[QueryKind, ...]:
        return tuple(self.queries) if self.queries else ALL_QUERIES
