"""What the operator keeps of the runs the watch shows.

kopf keeps the latest body of every run that has a loop (the daemon's live body
is the watch event's own object). Each run's body as the API server sends it
carries `metadata.managedFields`: which field manager (kubectl, the operator's
status patches, kopf's annotations) set which field, one small dict per field.
Measured on `make scale`'s runs: ~170 dicts a body, ~140 of them in
managedFields (~2.9 KB of its ~7.8 KB of JSON). Nothing in the operator reads
them (client-go's informers drop them the same way), so they are dropped from
the event before kopf keeps it, with kubectl's last-applied copy of the spec.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

# kubectl's copy of the manifest it last applied (client-side apply), ~1 KB a run:
# read by kubectl, never by the operator. kopf's own annotations stay (its diff base).
KUBECTL_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def drop_managed_fields(raw_body: Mapping[str, object]) -> None:
    """Remove `metadata.managedFields` (and kubectl's last-applied copy) from a watch
    event's object, in place."""
    metadata = raw_body.get("metadata")
    if isinstance(metadata, MutableMapping):
        metadata.pop("managedFields", None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, MutableMapping):
            annotations.pop(KUBECTL_LAST_APPLIED, None)
