"""The one module that talks to the Kubernetes API for the operator's own objects.

Server-side apply makes every write idempotent: applying the same manifest
twice is a no-op, so a restarted operator can replay any step safely. Every
API failure surfaces as ``KubeError``, whose message names the verb and the
object, so that the run's condition says what was refused.

No call waits forever: every request (discovery included) carries a connect
and a read timeout (`DBBENCH_API_TIMEOUT`), cut to what is left of the
current pass (`deadlines`), and a pass past its deadline makes no more calls.
A timeout or a refused connection is a ``KubeError`` with status 0.

Every call is checked against `k8s/permissions` (what the chart grants) before it
is made: a call the table does not declare is a programming error, refused
here rather than by the API server of a user's cluster. Each permission is
logged the first time it is used, so a run's log lists what it needed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError

from dbbench_operator import deadlines
from dbbench_operator.k8s import permissions
from dbbench_operator.settings import OperatorSettings

log = logging.getLogger(__name__)

FIELD_MANAGER = "dbbench-operator"
NOT_FOUND = 404
CONFLICT = 409
_MESSAGE_LIMIT = 600
CONNECT_TIMEOUT_S = 10.0
# Kept-alive connections to the API server: one per thread that may call at once
# (`controller/run_loop.PASS_WORKERS` pass threads and kopf's handler threads). The client's
# default (5 per core) is fewer: a connection returned to a full pool is closed,
# and the next call pays a new TLS handshake (5% of the operator's CPU at 300 runs).
API_CONNECTIONS = 24


class KubeError(Exception):
    """An API call failed; the message reads ``apply StatefulSet ns/name: 422 ...``."""

    def __init__(self, verb: str, kind: str, namespace: str | None, name: str, exc: Any) -> None:
        self.status = int(getattr(exc, "status", 0) or 0)
        # Throttling (429), the server's own errors (5xx) and no answer at all say
        # nothing about the request: the same call may succeed on a later pass.
        self.transient = (
            self.status == 429
            or self.status >= 500
            or isinstance(exc, urllib3.exceptions.HTTPError)
        )
        self.retry_after = _retry_after(exc) if self.transient else None
        where = f"{namespace}/{name}" if namespace else name
        super().__init__(f"{verb} {kind} {where}: {self.status} {_api_message(exc)}")


def _retry_after(exc: Any) -> float | None:
    """Seconds the API server asked the client to wait (its Retry-After header, which
    it sends with 429 and some 5xx answers); None when it named none."""
    headers: Any = getattr(exc, "headers", None)
    items = headers.items() if hasattr(headers, "items") else ()
    value = next((v for k, v in items if str(k).lower() == "retry-after"), None)
    try:
        seconds = float(str(value))
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date (the API server sends seconds)
    return seconds if seconds >= 0 else None


def _api_message(exc: Any) -> str:
    """The API server's own message (it names the invalid field), shortened."""
    if isinstance(exc, urllib3.exceptions.HTTPError):
        return f"no answer from the API server ({type(exc).__name__}: {exc})"[:_MESSAGE_LIMIT]
    body = getattr(exc, "body", None)
    try:
        text = str(json.loads(body).get("message")) if body else ""
    except (ValueError, AttributeError, TypeError):
        text = ""
    text = text or str(getattr(exc, "reason", "") or type(exc).__name__)
    return text[:_MESSAGE_LIMIT]


class UndeclaredPermissionError(RuntimeError):
    """The code made a call that `k8s/permissions.RULES` (and so the chart) does not grant."""


_used: set[tuple[str, str, str]] = set()
_used_lock = threading.Lock()
USED_MARK = "dbbench: API permission used:"


def _use(group: str, resource: str, verb: str) -> None:
    """Refuse an undeclared call; log a declared one the first time it is made."""
    wanted = (group, resource, verb)
    if wanted not in permissions.declared():
        raise UndeclaredPermissionError(
            f"{verb} {group or 'core'}/{resource} is not declared in permissions.RULES "
            "(the chart would not grant it)"
        )
    with _used_lock:
        if wanted in _used:
            return
        _used.add(wanted)
    log.info("%s %s %s %s", USED_MARK, group or "core", resource, verb)


@contextlib.contextmanager
def _call(verb: str, kind: str, namespace: str | None, name: str) -> Iterator[None]:
    deadlines.check(f"{verb} {kind} {name}")
    try:
        yield
    except (ApiException, DynamicApiError, urllib3.exceptions.HTTPError) as exc:
        raise KubeError(verb, kind, namespace, name, exc) from exc


def request_timeout() -> tuple[float, float]:
    """(connect, read) seconds for the next call: the setting, cut to a second past
    the pass's deadline (the pass is abandoned at the deadline; its thread ends soon
    after, and the pass's own clock, not a call's, decides what is reported)."""
    read = OperatorSettings.from_env().api_timeout
    left = deadlines.remaining()
    if left is not None:
        read = max(0.5, min(read, left + 1))
    return min(CONNECT_TIMEOUT_S, read), read


class _TimedApiClient(client.ApiClient):  # type: ignore[misc]
    """An ApiClient whose every request has a timeout unless the caller gave one.

    The generated client sends no timeout by default, and the dynamic client's
    discovery offers no way to pass one: this is the one place all calls pass.
    """

    def call_api(self, *args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        return super().call_api(*args, _request_timeout=_request_timeout or request_timeout(),
                                **kwargs)  # fmt: skip


@cache
def api_client() -> client.ApiClient:
    """In-cluster credentials in a pod; the kubeconfig (``$KUBECONFIG``) elsewhere."""
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        config.load_incluster_config(client_configuration=configuration)
    else:
        # Pass the path explicitly: the client's default is read at import time.
        config.load_kube_config(
            config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration
        )
    # Few retries inside a call, each of which may wait a full timeout again:
    # two more connection attempts, one more read for idempotent verbs (a pooled
    # connection the server closed). Beyond that the pass fails, says so, and
    # the next pass tries again.
    # A 429 or 503 with Retry-After is not retried (nor slept on) inside the call
    # either: it reaches the pass as a KubeError that carries the Retry-After, and
    # the run's loop backs off (`controller/pass_timing`) instead of holding a worker thread.
    configuration.retries = urllib3.Retry(total=3, connect=2, read=1, redirect=0, status=0,
                                          other=0, respect_retry_after_header=False)  # fmt: skip
    configuration.connection_pool_maxsize = API_CONNECTIONS
    return _TimedApiClient(configuration=configuration)


@cache
def dynamic() -> DynamicClient:
    dyn: DynamicClient = DynamicClient(api_client())
    return dyn


def _resource(api_version: str, kind: str, verb: str) -> Any:
    """The API resource of a kind (discovery needs no permission), once `verb` on it
    is known to be declared."""
    resource = _discover(api_version, kind)
    _use(str(resource.group or ""), str(resource.name), verb)
    return resource


def _discover(api_version: str, kind: str) -> Any:
    with _call("discover", kind, None, api_version):
        return dynamic().resources.get(api_version=api_version, kind=kind)


def _selector(pairs: Mapping[str, str] | None) -> str | None:
    """A label or field selector of equalities (``k=v,k2=v2``); None for none."""
    return ",".join(f"{k}={v}" for k, v in (pairs or {}).items()) or None


def _body(response: Any) -> dict[str, Any]:
    """The JSON body of a raw response. Every call asks the dynamic client not to
    wrap what it returns (`serialize=False`): it would build a ResourceInstance,
    an object per field of every item, only for `to_dict` to turn it back into
    the dicts the JSON was; that was most of a pass's CPU with lists of pods."""
    data: Any = json.loads(response.data)
    return data if isinstance(data, dict) else {}


def _drain(response: Any) -> None:
    """Read an unparsed answer to its end: only then does its connection go back to
    the pool (an unread one is closed, and the next call makes a new one)."""
    response.data  # noqa: B018 - reading is the point


def apply(manifest: Mapping[str, Any]) -> None:
    """Create or update one object with server-side apply (idempotent)."""
    meta = manifest["metadata"]
    kind, namespace = manifest["kind"], meta.get("namespace")
    # Server-side apply is a PATCH, and the API server also asks for `create` when
    # the object does not exist yet (seen: 403 "cannot create resource").
    resource = _resource(manifest["apiVersion"], kind, "patch")
    _use(str(resource.group or ""), str(resource.name), "create")
    with _call("apply", kind, namespace, meta["name"]):
        _drain(
            resource.server_side_apply(
                body=dict(manifest),
                name=meta["name"],
                namespace=namespace,
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                serialize=False,
            )
        )


def apply_all(manifests: Iterable[Mapping[str, Any]]) -> None:
    for manifest in manifests:
        apply(manifest)


def get(api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
    """The object as a plain dict, or None when it does not exist."""
    resource = _resource(api_version, kind, "get")
    try:
        with _call("get", kind, namespace, name):
            return _body(resource.get(name=name, namespace=namespace, serialize=False))
    except KubeError as exc:
        if exc.status == NOT_FOUND:
            return None
        raise


# Objects a list call asks for at a time (`limit`): a pass that reads every run
# of a 1,000-run cluster (admission's resync) holds one page of their bodies
# at a time, not ~8 MB of JSON and its dicts at once.
LIST_PAGE = 100


def iter_objects(
    api_version: str,
    kind: str,
    namespace: str | None,
    labels: Mapping[str, str] | None = None,
    *,
    fields: Mapping[str, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """Objects of a kind (all namespaces when `namespace` is None), by label and field
    equality (e.g. Events by ``involvedObject.uid``), read `LIST_PAGE` at a time."""
    selector, field_selector = _selector(labels), _selector(fields)
    resource = _resource(api_version, kind, "list")
    token: str | None = None
    while True:
        with _call("list", kind, namespace, selector or field_selector or "*"):
            found = _body(resource.get(namespace=namespace, label_selector=selector,
                                       field_selector=field_selector, limit=LIST_PAGE,
                                       _continue=token, serialize=False))  # fmt: skip
        yield from found.get("items") or []
        token = (found.get("metadata") or {}).get("continue") or None
        if token is None:
            return


def list_objects(
    api_version: str,
    kind: str,
    namespace: str | None,
    labels: Mapping[str, str] | None = None,
    *,
    fields: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """`iter_objects`, as a list."""
    return list(iter_objects(api_version, kind, namespace, labels, fields=fields))


def delete(api_version: str, kind: str, namespace: str, name: str) -> bool:
    """Delete (background propagation: dependents such as pods go too); False if absent."""
    resource = _resource(api_version, kind, "delete")
    try:
        with _call("delete", kind, namespace, name):
            _drain(
                resource.delete(
                    name=name,
                    namespace=namespace,
                    body={"propagationPolicy": "Background"},
                    serialize=False,
                )
            )
    except KubeError as exc:
        if exc.status == NOT_FOUND:
            return False
        raise
    return True


def delete_collection(
    api_version: str, kind: str, namespace: str, labels: Mapping[str, str]
) -> None:
    """Delete every object of a kind in a namespace that has these labels: one
    request, however many match (none, or a namespace gone, is success).

    Background propagation, as `delete`: the API server removes the objects at once
    and their own dependents go to the garbage collector. (A Job's default would be
    to orphan its pods, which holds the Job until the collector has unlinked them.)
    """
    selector = _selector(labels)
    if selector is None:
        raise ValueError("delete_collection needs a label selector")  # never a whole kind
    resource = _resource(api_version, kind, "deletecollection")
    try:
        with _call("deletecollection", kind, namespace, selector):
            _drain(
                resource.delete(
                    namespace=namespace,
                    label_selector=selector,
                    body={"propagationPolicy": "Background"},
                    # The answer lists every object deleted, in full: read, not parsed.
                    serialize=False,
                )
            )
    except KubeError as exc:
        if exc.status != NOT_FOUND:
            raise


def patch_merge(
    api_version: str, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
) -> None:
    resource = _resource(api_version, kind, "patch")
    with _call("patch", kind, namespace, name):
        _drain(
            resource.patch(
                name=name,
                namespace=namespace,
                body=dict(patch),
                content_type="application/merge-patch+json",
                serialize=False,
            )
        )


def patch_status(
    api_version: str, kind: str, namespace: str, name: str, status: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge-patch an object's status subresource (None values remove keys); the
    object as the API server has it afterwards."""
    resource = _discover(api_version, kind)
    _use(str(resource.group or ""), f"{resource.name}/status", "patch")
    with _call("patch", f"{kind} status", namespace, name):
        patched = resource.subresources["status"].patch(
            name=name,
            namespace=namespace,
            body={"status": dict(status)},
            content_type="application/merge-patch+json",
            serialize=False,
        )
    return _body(patched)


def create_if_absent(manifest: Mapping[str, Any]) -> bool:
    """Create an object only if it is missing (409 is success); True when created.

    For objects whose content must never be rewritten once made, such as
    generated credentials: a second pass must not rotate a password that the
    databases already use.
    """
    meta = manifest["metadata"]
    kind, namespace = manifest["kind"], meta.get("namespace")
    resource = _resource(manifest["apiVersion"], kind, "create")
    try:
        with _call("create", kind, namespace, meta["name"]):
            _drain(resource.create(body=dict(manifest), namespace=namespace, serialize=False))
    except KubeError as exc:
        if exc.status == CONFLICT:
            return False
        raise
    return True


def read_secret(namespace: str, name: str) -> tuple[dict[str, Any], dict[str, bytes]] | None:
    """A Secret's metadata and decoded data; None when it does not exist."""
    _use("", "secrets", "get")
    try:
        with _call("get", "Secret", namespace, name):
            secret = client.CoreV1Api(api_client()).read_namespaced_secret(name, namespace)
    except KubeError as exc:
        if exc.status == NOT_FOUND:
            return None
        raise
    meta: dict[str, Any] = api_client().sanitize_for_serialization(secret.metadata)
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    return meta, data


def read_secret_key(namespace: str, name: str, key: str) -> bytes | None:
    """One value of a Secret, decoded; None when the Secret or key is missing."""
    found = read_secret(namespace, name)
    return None if found is None else found[1].get(key)


def ensure_secret_key(namespace: str, name: str, key: str, value: str) -> None:
    """Add a key to an existing Secret unless it is there (older runs lack newer keys)."""
    if read_secret_key(namespace, name, key) is not None:
        return
    encoded = base64.b64encode(value.encode()).decode()
    patch_merge("v1", "Secret", namespace, name, {"data": {key: encoded}})
