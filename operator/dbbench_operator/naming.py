"""Names and labels of the objects a run owns directly (not per target).

Per-target objects are named in ``specs.databases.target_names``; both use the same label
keys so ``kubectl get all -l dbbench.io/run=<run>`` finds everything, and
``dbbench.io/run-uid`` tells one run from an earlier run of the same name:
every selector the operator acts on uses the uid label, and every object it
finds by name is checked for the run's uid (`k8s/ownership`).

Run names are DNS subdomains (up to 253 characters, dots allowed); the names
made here are DNS-1035 labels of at most 63 characters (what a Job's pods and
a Service need), and label values at most 63 characters that begin and end
with an alphanumeric, for every run name the API server accepts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbbench_contract.api import API_VERSION, GROUP, KIND, PLURAL, VERSION
from dbbench_contract.history import SERIES_LABEL

__all__ = ["GROUP", "PLURAL", "VERSION", "RunRef", "adopt", "child_name", "run_labels"]

MANAGED_BY = "dbbench"
RUN_LABEL = "dbbench.io/run"
RUN_UID_LABEL = "dbbench.io/run-uid"
RUN_NAMESPACE_LABEL = "dbbench.io/run-namespace"
_MAX_NAME = 63
_HASH = 8
_NOT_LABEL = re.compile(r"[^a-z0-9-]+")
_NOT_LABEL_VALUE = re.compile(r"[^A-Za-z0-9._-]+")
_LABEL_VALUE = r"([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?"


@dataclass(frozen=True)
class RunRef:
    """The identity of one BenchmarkRun, read once from its metadata."""

    name: str
    namespace: str
    uid: str
    generation: int = 1
    # The run's series (its dbbench.io/series label) as this pass read it: what
    # the run's summary.json records and its ChangePoint verdict is asked for.
    # Not part of the identity: a label edited mid-run names the same run.
    series: str | None = field(default=None, compare=False)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> RunRef:
        series = (meta.get("labels") or {}).get(SERIES_LABEL)
        return cls(
            name=str(meta["name"]),
            namespace=str(meta["namespace"]),
            uid=str(meta.get("uid", "")),
            generation=int(meta.get("generation", 1)),
            series=str(series) if series else None,
        )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH]


def _is_dns_label(text: str) -> bool:
    return len(text) <= _MAX_NAME and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", text) is not None


def _clean(text: str) -> str:
    """Lowercase letters, digits and single hyphens, beginning with a letter."""
    stem = re.sub(r"-{2,}", "-", _NOT_LABEL.sub("-", text.lower())).strip("-")
    return stem if stem[:1].isalpha() else f"r-{stem}".rstrip("-")


def dns_label(text: str, limit: int = _MAX_NAME) -> str:
    """`text` as a DNS-1035 label of at most `limit` characters: unchanged when it is
    one, else cleaned and cut, with a hash of the whole text to keep texts apart."""
    if len(text) <= limit and _is_dns_label(text):
        return text
    return f"{_clean(text)[: limit - _HASH - 1].rstrip('-')}-{_digest(text)}"


def label_value(text: str) -> str:
    """`text` as a label value: at most 63 characters of [A-Za-z0-9._-], beginning and
    ending with an alphanumeric; a hash keeps shortened values apart."""
    if len(text) <= _MAX_NAME and re.fullmatch(_LABEL_VALUE, text):
        return text
    stem = _NOT_LABEL_VALUE.sub("-", text)[: _MAX_NAME - _HASH - 1].strip("-_.")
    return f"{stem}-{_digest(text)}" if stem else _digest(text)


def child_name(run: RunRef, suffix: str, limit: int = _MAX_NAME) -> str:
    """``<run>-<suffix>`` as a DNS-1035 label of at most `limit` characters. When the
    plain form is not one (too long, dots, a leading digit) the run's name is cleaned
    and cut, and a hash of the plain form keeps runs apart ("a.b" and "a-b" differ)."""
    plain = f"{run.name}-{suffix}"
    if len(plain) <= limit and _is_dns_label(plain):
        return plain
    stem = _clean(run.name)[: limit - len(suffix) - _HASH - 2].rstrip("-")
    return f"{stem}-{_digest(plain)}-{suffix}"


def credentials_secret_name(run: RunRef) -> str:
    return child_name(run, "credentials")


def plan_configmap_name(run: RunRef) -> str:
    return child_name(run, "plan")


def run_labels(run: RunRef, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "dbbench",
        "app.kubernetes.io/instance": label_value(run.name),
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        RUN_LABEL: label_value(run.name),
        RUN_UID_LABEL: run.uid,
    }


def run_selector(run: RunRef, **more: str) -> dict[str, str]:
    """What selects this run's own objects and nothing of another run, even one of
    the same name: its uid."""
    return {RUN_UID_LABEL: run.uid, **more}


def owner_reference(run: RunRef) -> dict[str, Any]:
    """Makes the run the controller of a child: deleting the run deletes the child."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": run.name,
        "uid": run.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def adopt(manifest: Mapping[str, Any], run: RunRef) -> dict[str, Any]:
    """A copy of a namespaced manifest owned by the run, in the run's namespace.

    The same job as ``kopf.adopt``, kept pure and free of kopf so builders can
    use it.
    """
    adopted = dict(manifest)
    meta = dict(adopted.get("metadata", {}))
    meta["namespace"] = run.namespace
    meta["ownerReferences"] = [owner_reference(run)]
    meta["labels"] = {
        **meta.get("labels", {}), RUN_LABEL: label_value(run.name), RUN_UID_LABEL: run.uid,
    }  # fmt: skip
    adopted["metadata"] = meta
    return adopted
