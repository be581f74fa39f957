"""Pydantic JSON schema -> Kubernetes structural OpenAPI v3 schema.

Pure. Kubernetes wants every node typed, no ``$ref``/``anyOf`` of types, no
``additionalProperties: false`` next to ``properties``, and OpenAPI 3.0's boolean
``exclusiveMinimum``. Anything this module does not know raises, so a new
pydantic construct cannot silently produce a schema the API server rejects.
"""

from __future__ import annotations

from typing import Any

JsonSchema = dict[str, Any]

_DROPPED = {"title"}
_PASSED = {
    "description",
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
    "required",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
}
# The order keys are written in: what `kubectl explain` and a reader want first.
_KEY_ORDER = [
    "description",
    "type",
    "format",
    "enum",
    "default",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "x-kubernetes-validations",
]
_RULE_ORDER = ["rule", "message", "messageExpression", "fieldPath", "reason"]
_NULL = {"type": "null"}


def to_structural(schema: JsonSchema) -> JsonSchema:
    """The structural equivalent of a pydantic ``model_json_schema()``."""
    return _convert(schema, schema.get("$defs", {}))


def _resolve(node: JsonSchema, defs: JsonSchema) -> JsonSchema:
    """Inline ``$ref`` and drop the null branch of ``X | None``; outer keys
    (the field's description and default) win over the referenced model's."""
    node = {k: v for k, v in node.items() if k != "$defs"}
    if "$ref" in node:
        target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
        node = {**_resolve(target, defs), **node}
    if "anyOf" in node:
        branches = [b for b in node.pop("anyOf") if b != _NULL]
        types = {b.get("type") for b in branches}
        if len(branches) == 1:
            node = {**_resolve(branches[0], defs), **node}
        elif types == {"integer", "string"} and all(
            set(b) <= {"type", "pattern"} for b in branches
        ):
            # The one anyOf Kubernetes accepts: int-or-string; a pattern checks the string form.
            node["x-kubernetes-int-or-string"] = True
            node.update({k: v for b in branches for k, v in b.items() if k == "pattern"})
        else:
            raise ValueError(f"cannot express anyOf {branches} structurally")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    return node


def _convert(raw: JsonSchema, defs: JsonSchema) -> JsonSchema:
    out: JsonSchema = {}
    for key, value in _resolve(raw, defs).items():
        if key in _DROPPED or (key == "default" and value is None):
            continue
        out.update(_convert_keyword(key, value, defs))
    if out.get("type") == "string" and "enum" in out and "maxLength" not in out:
        # CEL's cost estimator ignores enums; without a bound every comparison
        # with an enum field is costed as if the string were megabytes long.
        # 64 rather than the longest value, so a typo reads "Unsupported value"
        # instead of "Too long".
        out["maxLength"] = max(64, *(len(v) for v in out["enum"]))
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return _ordered(out, _KEY_ORDER)


def _convert_children(key: str, value: Any, defs: JsonSchema) -> JsonSchema:
    """Keywords holding sub-schemas."""
    if key == "properties":
        return {key: {name: _convert(sub, defs) for name, sub in value.items()}}
    if key == "items":
        return {key: _convert(value, defs)}
    if value is True or value == {}:  # additionalProperties: dict[str, Any]
        return {"x-kubernetes-preserve-unknown-fields": True}
    # False is pydantic's extra="forbid": the API server prunes unknown keys,
    # or rejects them under kubectl's default strict field validation.
    return {key: _convert(value, defs)} if isinstance(value, dict) else {}


def _convert_keyword(key: str, value: Any, defs: JsonSchema) -> JsonSchema:
    """One JSON-schema keyword as the structural keywords it becomes."""
    if key in ("properties", "items", "additionalProperties"):
        return _convert_children(key, value, defs)
    if key == "exclusiveMinimum":
        return {"minimum": value, "exclusiveMinimum": True}
    if key == "x-kubernetes-validations":
        return {key: [_ordered(rule, _RULE_ORDER) for rule in value]}
    if key == "description":
        # Docstrings wrap lines; kubectl explain re-wraps text itself.
        return {key: " ".join(value.split())}
    if key in _PASSED:
        return {key: value}
    raise ValueError(f"schema keyword {key!r} has no structural translation")


def _ordered(node: JsonSchema, order: list[str]) -> JsonSchema:
    rank = {key: i for i, key in enumerate(order)}
    return dict(sorted(node.items(), key=lambda kv: (rank.get(kv[0], len(order)), kv[0])))
