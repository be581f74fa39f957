"""What the Kubernetes API server does to a created BenchmarkRun before its CEL
rules, offline and pure: strict field validation (unknown fields), structural
defaulting, the OpenAPI schema (kube-openapi's validator as the
apiextensions-apiserver of Kubernetes 1.34 runs it), the list-type map/set
invariants and metadata.name.

Each refusal is a `FieldError` worded as the API server words it
(`field.Error.ErrorBody()` of k8s.io/apimachinery): `Required value`,
`Unsupported value: "x": supported values: ...`, `Invalid value: 0: spec.repeats
in body should be greater than or equal to 1`, ... The walk follows the order of
kube-openapi's validators (type, string, number, items then item counts, enum,
properties then required); the API server's own order of properties is Go's map
order, which is random, so only the set of errors is comparable.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .base import Problem

Schema = Mapping[str, Any]
_OMIT = object()  # a field error that shows no value (Required, Forbidden, TooLong)

# field.ErrorType's String() per type name of k8s.io/apimachinery/pkg/util/validation/field.
_TYPE_TEXT = {
    "Required": "Required value",
    "Invalid": "Invalid value",
    "TypeInvalid": "Invalid value",
    "NotSupported": "Unsupported value",
    "Forbidden": "Forbidden",
    "TooLong": "Too long",
    "TooMany": "Too many",
    "Duplicate": "Duplicate value",
}
# Types that stop the CEL rules from running (customresource strategy's hasBlockingErr).
BLOCKING = frozenset({"NotSupported", "Required", "TooLong", "TooMany", "TypeInvalid"})

# ObjectMeta's JSON fields: anything else under metadata is an unknown field.
OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})  # fmt: skip
_DNS1123_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


def go_float(value: float) -> str:
    """Go's %v of a float64: shortest digits, exponent form below 1e-4 or from 1e+06 on."""
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    exp = len(text) + exponent - 1
    minus = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp < 0:
        return f"{minus}0.{'0' * (-exp - 1)}{text}"
    whole = text[: exp + 1].ljust(exp + 1, "0")
    rest = text[exp + 1 :]
    return f"{minus}{whole}{'.' + rest if rest else ''}"


def go_value(value: Any) -> str:
    """A bad value as ErrorBody() prints it: numbers and bools plain, strings %q, the
    rest as Go's json.Marshal (sorted keys, no spaces)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class FieldError:
    """One field.Error: its type name (FieldValue<Type>), path, bad value and detail."""

    type: str
    field: str
    detail: str = ""
    value: Any = _OMIT

    def body(self) -> str:
        text = _TYPE_TEXT[self.type]
        if self.value is not _OMIT and self.type not in ("Required", "Forbidden", "TooLong"):
            text = f"{text}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def problem(self) -> Problem:
        return Problem(self.field, self.body())


# -- strict field validation, defaulting ------------------------------------------


def unknown_fields(value: Any, schema: Schema, path: str = "") -> Iterator[str]:
    """Paths of fields the structural schema does not declare (pruning's unknown
    fields, which `kubectl apply/create` refuses with field validation Strict)."""
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if properties is not None and key in properties:
                if path == "" and key == "metadata":
                    meta = item if isinstance(item, dict) else {}
                    yield from (f"metadata.{k}" for k in meta if k not in OBJECT_META_FIELDS)
                    continue
                yield from unknown_fields(item, properties[key], child)
            elif isinstance(extra, Mapping):
                yield from unknown_fields(item, extra, child)
            elif properties is not None or extra is False:
                yield child
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from unknown_fields(item, schema["items"], f"{path}[{index}]")


def defaulted(value: Any, schema: Schema) -> Any:
    """A deep copy with the API server's structural defaults applied: missing (or null)
    properties with a `default` get it, recursively, nulls without one are dropped."""
    value = copy.deepcopy(value)
    _prune_nulls(value, schema)
    _default(value, schema)
    return value


def _prune_nulls(value: Any, schema: Schema | None) -> None:
    if isinstance(value, dict):
        for key in list(value):
            sub = _field_schema(schema, key)
            if value[key] is None and sub is not None and "default" not in sub:
                del value[key]
            else:
                _prune_nulls(value[key], sub)
    elif isinstance(value, list):
        items = schema.get("items") if schema else None
        for item in value:
            _prune_nulls(item, items if isinstance(items, Mapping) else None)


def _field_schema(schema: Schema | None, key: str) -> Schema | None:
    if schema is None:
        return None
    found = (schema.get("properties") or {}).get(key)
    extra = schema.get("additionalProperties")
    return found if found is not None else (extra if isinstance(extra, Mapping) else None)


def _default(value: Any, schema: Schema | None) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if "default" in sub and value.get(key) is None:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            _default(item, _field_schema(schema, key))
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            if item is None and "default" in schema["items"]:
                value[index] = copy.deepcopy(schema["items"]["default"])
            _default(value[index], schema["items"])


# -- the OpenAPI schema (kube-openapi validate) ----------------------------------------


def _types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else []


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_error(schema: Schema, value: Any, path: str) -> FieldError | None:
    types = _types(schema)
    if not types:
        return None
    kind = "null" if value is None else _kind(value)
    fits = kind in types or (
        kind == "number" and "integer" in types and float(value).is_integer()
    ) or (kind == "integer" and "number" in types)  # fmt: skip
    if fits:
        return None
    detail = f'{path} in body must be of type {",".join(types)}: "{kind}"'
    return FieldError("TypeInvalid", path, detail, kind)


def _go_regex(pattern: str) -> re.Pattern[str]:
    """Go's RE2 `$` is the end of the text; Python's also matches before a final newline."""
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == "]":
            in_class = False
            out.append(char)
        else:
            out.append(r"\Z" if char == "$" and not in_class else char)
    return re.compile("".join(out))


def _string_error(schema: Schema, value: str, path: str) -> FieldError | None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        limit = schema["maxLength"]
        return FieldError("TooLong", path, f"may not be more than {limit} byte{'s' * (limit != 1)}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        detail = f"{path} in body should be at least {schema['minLength']} chars long"
        return FieldError("Invalid", path, detail, value)
    pattern = schema.get("pattern")
    if pattern and not _go_regex(pattern).search(value):
        return FieldError("Invalid", path, f"{path} in body should match '{pattern}'", value)
    return None


def _bound(bound: float, value: int | float) -> str:
    return str(int(bound)) if isinstance(value, int) else go_float(float(bound))


def _number_errors(schema: Schema, value: int | float, path: str) -> Iterator[FieldError]:
    if "minimum" in schema:
        low, exclusive = schema["minimum"], bool(schema.get("exclusiveMinimum"))
        low_cmp = int(low) if isinstance(value, int) else low
        if value < low_cmp or (exclusive and value == low_cmp):
            word = "greater than" if exclusive else "greater than or equal to"
            yield FieldError(
                "Invalid", path, f"{path} in body should be {word} {_bound(low, value)}", value
            )
    if "maximum" in schema:
        high, exclusive = schema["maximum"], bool(schema.get("exclusiveMaximum"))
        high_cmp = int(high) if isinstance(value, int) else high
        if value > high_cmp or (exclusive and value == high_cmp):
            word = "less than" if exclusive else "less than or equal to"
            yield FieldError(
                "Invalid", path, f"{path} in body should be {word} {_bound(high, value)}", value
            )


def _enum_error(schema: Schema, value: Any, path: str) -> FieldError | None:
    allowed = schema.get("enum")
    if not allowed or any(value == option and type(value) is type(option) for option in allowed):
        return None
    shown = ", ".join(
        json.dumps(o if isinstance(o, str) else json.dumps(o), ensure_ascii=False) for o in allowed
    )
    return FieldError("NotSupported", path, f"supported values: {shown}", value)


def schema_errors(value: Any, schema: Schema, path: str = "") -> Iterator[FieldError]:
    """kube-openapi's SchemaValidator on one node and its children, in its order."""
    if value is None:
        error = _type_error(schema, value, path)
        if error is not None:
            yield error
        return
    error = _type_error(schema, value, path)
    if error is not None:
        yield error
    if isinstance(value, str):
        error = _string_error(schema, value, path)
        if error is not None:
            yield error
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        yield from _number_errors(schema, value, path)
    if isinstance(value, list):
        yield from _array_errors(schema, value, path)
    error = _enum_error(schema, value, path)
    if error is not None:
        yield error
    if isinstance(value, dict):
        yield from _object_errors(schema, value, path)


def _array_errors(schema: Schema, value: list[Any], path: str) -> Iterator[FieldError]:
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            yield from schema_errors(item, items, f"{path}[{index}]")
    if "minItems" in schema and len(value) < schema["minItems"]:
        detail = f"{path} in body should have at least {schema['minItems']} items"
        yield FieldError("Invalid", path, detail, len(value))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        limit = schema["maxItems"]
        detail = f"must have at most {limit} item{'s' * (limit != 1)}"
        yield FieldError("TooMany", path, detail, len(value))


def _object_errors(schema: Schema, value: dict[str, Any], path: str) -> Iterator[FieldError]:
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        limit = schema["maxProperties"]
        detail = f"must have at most {limit} item{'s' * (limit != 1)}"
        yield FieldError("TooMany", path, detail, len(value))
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        for key, item in value.items():
            if key not in properties:
                yield from schema_errors(item, extra, f"{path}.{key}")
    for key, sub in properties.items():
        if key in value:
            yield from schema_errors(value[key], sub, f"{path}.{key}" if path else key)
    for key in schema.get("required") or ():
        if key not in value:
            yield FieldError("Required", f"{path}.{key}" if path else key)


# -- list types, metadata --------------------------------------------------------------


def list_type_errors(value: Any, schema: Schema, path: str = "") -> Iterator[FieldError]:
    """x-kubernetes-list-type set/map: the second occurrence of a value or key."""
    if isinstance(value, dict):
        for key, item in value.items():
            sub = _field_schema(schema, key)
            if sub is not None:
                yield from list_type_errors(item, sub, f"{path}.{key}" if path else key)
        return
    if not isinstance(value, list):
        return
    kind = schema.get("x-kubernetes-list-type")
    if kind in ("set", "map"):
        keys: list[Any] = value
        if kind == "map":
            names = schema.get("x-kubernetes-list-map-keys") or []
            keys = [{k: item[k] for k in names if k in item} if isinstance(item, dict) else {}
                    for item in value]  # fmt: skip
        seen: dict[str, int] = {}
        for index, key in enumerate(keys):
            marker = json.dumps(key, sort_keys=True)
            seen[marker] = seen.get(marker, 0) + 1
            if seen[marker] == 2:
                yield FieldError("Duplicate", f"{path}[{index}]", value=key)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            yield from list_type_errors(item, items, f"{path}[{index}]")


def metadata_errors(metadata: Any) -> Iterator[FieldError]:
    """metadata.name as ValidateObjectMetaAccessor checks it (NameIsDNSSubdomain)."""
    meta = metadata if isinstance(metadata, dict) else {}
    name, generate = meta.get("name"), meta.get("generateName")
    if not name:
        if not generate:
            yield FieldError("Required", "metadata.name", "name or generateName is required")
        return
    name = str(name)
    if len(name) > 253:
        yield FieldError("Invalid", "metadata.name", "must be no more than 253 characters", name)
    if not re.fullmatch(_DNS1123_SUBDOMAIN, name):
        yield FieldError(
            "Invalid", "metadata.name",
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            f"'example.com', regex used for validation is '{_DNS1123_SUBDOMAIN}')",
            name,
        )  # fmt: skip
