"""The one module that talks to the Kubernetes API for the operator's own objects.

Server-side apply makes every write idempotent: applying the same manifest
twice is a no-op, so a restarted operator can replay any step safely.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

FIELD_MANAGER = "dbbench-operator"
NOT_FOUND = 404


@cache
def api_client() -> client.ApiClient:
    """In-cluster credentials in a pod; the kubeconfig (``$KUBECONFIG``) elsewhere."""
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        config.load_incluster_config()
        in_cluster: client.ApiClient = client.ApiClient()
        return in_cluster
    # Pass the path explicitly: the client's default is read at import time.
    from_file: client.ApiClient = config.new_client_from_config(
        config_file=os.environ.get("KUBECONFIG")
    )
    return from_file


@cache
def dynamic() -> DynamicClient:
    dyn: DynamicClient = DynamicClient(api_client())
    return dyn


def _resource(api_version: str, kind: str) -> Any:
    return dynamic().resources.get(api_version=api_version, kind=kind)


def apply(manifest: Mapping[str, Any]) -> None:
    """Create or update one object with server-side apply (idempotent)."""
    meta = manifest["metadata"]
    _resource(manifest["apiVersion"], manifest["kind"]).server_side_apply(
        body=dict(manifest),
        name=meta["name"],
        namespace=meta.get("namespace"),
        field_manager=FIELD_MANAGER,
        force_conflicts=True,
    )


def apply_all(manifests: Iterable[Mapping[str, Any]]) -> None:
    for manifest in manifests:
        apply(manifest)


def get(api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The object as a plain dict, or None when it does not exist."""
    try:
        obj = _resource(api_version, kind).get(name=name, namespace=namespace)
    except NotFoundError:
        return None
    result: dict[str, Any] = obj.to_dict()
    return result


def create_if_absent(manifest: Mapping[str, Any]) -> bool:
    """Create an object only if it is missing (409 is success); True when created.

    For objects whose content must never be rewritten once made, such as
    generated credentials: a second pass must not rotate a password that the
    databases already use.
    """
    meta = manifest["metadata"]
    try:
        _resource(manifest["apiVersion"], manifest["kind"]).create(
            body=dict(manifest), namespace=meta.get("namespace")
        )
    except ApiException as exc:
        if exc.status == 409:
            return False
        raise
    return True


def read_secret_key(namespace: str, name: str, key: str) -> bytes | None:
    """One value of a Secret, decoded; None when the Secret or key is missing."""
    import base64  # noqa: PLC0415 - only secret reads need it

    try:
        secret = client.CoreV1Api(api_client()).read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == NOT_FOUND:
            return None
        raise
    value = (secret.data or {}).get(key)
    return None if value is None else base64.b64decode(value)
