"""Reading the step file (its models live in ``dbbench_contract.step``).

The file is parsed once, here, into the contract's frozen models; nothing
below this module touches raw dicts. What needs I/O stays here: the
target's URI file and password file are read when the runner starts.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml
from pydantic import ValidationError

from dbbench_contract.api.mix import Mix
from dbbench_contract.api.phases import (
    Distribution,
    Phase,
    PhaseType,
    QueryKind,
    ReadPreference,
    WriteConcern,
)
from dbbench_contract.api.spec import Dataset, Shape
from dbbench_contract.api.targets import Engine
from dbbench_contract.step import (
    HASHED_KEY_SHAPES,
    MIN_HASHED_FRACTION,
    DatabaseHost,
    DatabasePod,
    Endpoint,
    KeyChoice,
    MySQLDriverName,
    Pod,
    StepConfig,
    StepDataset,
    Target,
    Tuning,
    describe_error,
)

__all__ = [
    "HASHED_KEY_SHAPES",
    "MIN_HASHED_FRACTION",
    "ConfigError",
    "DatabaseHost",
    "DatabasePod",
    "Dataset",
    "Distribution",
    "Endpoint",
    "Engine",
    "KeyChoice",
    "Mix",
    "MySQLDriverName",
    "Phase",
    "PhaseType",
    "Pod",
    "QueryKind",
    "ReadPreference",
    "Shape",
    "StepConfig",
    "StepDataset",
    "Target",
    "Tuning",
    "WriteConcern",
    "load_config",
    "parse_config",
    "parse_uri",
    "password",
    "resolve_target",
]

# The relational engines' URI schemes (postgres:// is libpq's short form).
_SCHEMES = {"mysql": 3306, "mariadb": 3306, "postgresql": 5432, "postgres": 5432}
_ENGINE_SCHEMES = {"mysql": ("mysql", "mariadb"), "mariadb": ("mysql", "mariadb"),
                   "postgresql": ("postgresql", "postgres")}  # fmt: skip


class ConfigError(Exception):
    """Invalid step configuration; the message names the offending field."""


def parse_uri(uri: str, engine: str = "mysql") -> dict[str, object]:
    """scheme://user:password@host:port/database -> Target fields (password never logged)."""
    parts = urlsplit(uri)
    if parts.scheme not in _ENGINE_SCHEMES.get(engine, ()) or not parts.hostname:
        example = "postgresql://user:password@host:5432/db" if engine == "postgresql" else (
            "mysql://user:password@host:3306/db")  # fmt: skip
        raise ValueError(f"uriFile: a {engine} URI looks like {example}")
    fields: dict[str, object] = {
        "host": parts.hostname,
        "port": parts.port or _SCHEMES[parts.scheme],
    }
    if parts.username:
        fields["user"] = unquote(parts.username)
    if parts.password is not None:
        fields["password"] = unquote(parts.password)
    database = parts.path.lstrip("/")
    if database:
        fields["database"] = database
    return fields


def resolve_target(target: Target) -> Target:
    """The target with `uriFile` read and, for relational URIs, split into fields."""
    if target.uri_file is None:
        return target
    try:
        uri = target.uri_file.read_text().strip()
    except OSError as exc:
        raise ValueError(f"uriFile: cannot read {target.uri_file}: {exc.strerror}") from exc
    fields: dict[str, object] = {"uri_file": None}
    if target.engine == "mongodb":
        fields["uri"] = uri
    else:
        fields.update(parse_uri(uri, target.engine))
    return target.model_copy(update=fields)


def password(target: Target) -> str | None:
    """The password, read from passwordFile when given (a mounted Secret)."""
    if target.password_file is not None:
        return target.password_file.read_text().strip()
    return target.password


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
        target = resolve_target(config.target)
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"invalid config:\n  target.{exc}") from exc
    return config.model_copy(update={"target": target})


def parse_config(raw: object) -> StepConfig:
    if not isinstance(raw, dict):
        raise ConfigError("(top level): the config must be a mapping")
    try:
        return StepConfig.model_validate(raw)
    except ValidationError as exc:
        lines = [describe_error(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        raise ConfigError("invalid config:\n  " + "\n  ".join(lines)) from exc
