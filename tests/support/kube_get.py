"""`kubectl get ... -o json` for the objects tests poll, read over the API directly.

The operator tests poll the API server every half second (`wait_for`); each poll
was a `kubectl` process, 0.06-0.08 s of CPU to start and discover the API: 300
of them cost 17 s of the 59 s that test_run_children and test_startup_waits
spent (2026-11-28). The same GET from this process costs a few milliseconds
and returns the same object from the same API server. Only the plain forms are
read here (one kind the table names, an object's name or a label selector, a
namespace); anything else (`all`, several kinds, field selectors, events) is
still kubectl's.

Each thread keeps one connection per API server: a new TLS session per poll
(a fresh context loading the CA, then the handshake, on both sides) was most of
a poll's cost.
"""

from __future__ import annotations

import functools
import http.client
import json
import ssl
import threading
import urllib.parse
from typing import Any, Protocol

# kubectl's names for a kind -> (API path prefix, plural, apiVersion, kind).
_KINDS: dict[str, tuple[str, str, str, str]] = {}
for _names, _entry in (
    (("benchmarkrun", "benchmarkruns", "br"),
     ("/apis/dbbench.io/v1alpha1", "benchmarkruns", "dbbench.io/v1alpha1", "BenchmarkRun")),
    (("benchmarkschedule", "benchmarkschedules", "bs"),
     ("/apis/dbbench.io/v1alpha1", "benchmarkschedules", "dbbench.io/v1alpha1",
      "BenchmarkSchedule")),
    (("secret", "secrets"), ("/api/v1", "secrets", "v1", "Secret")),
    (("configmap", "configmaps"), ("/api/v1", "configmaps", "v1", "ConfigMap")),
    (("pod", "pods"), ("/api/v1", "pods", "v1", "Pod")),
    (("job", "jobs"), ("/apis/batch/v1", "jobs", "batch/v1", "Job")),
    (("statefulset", "statefulsets"),
     ("/apis/apps/v1", "statefulsets", "apps/v1", "StatefulSet")),
):  # fmt: skip
    _KINDS.update(dict.fromkeys(_names, _entry))


class Cluster(Protocol):
    """What is read of a ControlPlane (tests/fixtures/controlplane.py)."""

    @property
    def server(self) -> str: ...
    @property
    def ca(self) -> Any: ...
    @property
    def admin_token(self) -> str: ...


def rest_path(args: tuple[str, ...]) -> tuple[str, bool] | None:
    """The API path `kubectl get *args` reads and whether it is a list; None for a
    form this module leaves to kubectl."""
    if not args or args[0] not in _KINDS:
        return None
    prefix, plural, _, _ = _KINDS[args[0]]
    name = namespace = selector = None
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        if arg == "-n" and rest:
            namespace = rest.pop(0)
        elif arg.startswith("-l") and len(arg) > 2:
            selector = arg[2:]
        elif not arg.startswith("-") and name is None:
            name = arg
        else:
            return None
    if namespace is None or (name is not None and selector is not None):
        return None  # kubectl's current namespace, or a form it refuses
    path = f"{prefix}/namespaces/{urllib.parse.quote(namespace)}/{plural}"
    if name is not None:
        return f"{path}/{urllib.parse.quote(name)}", False
    query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
    return path + query, True


_local = threading.local()


@functools.cache
def _tls(cafile: str) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cafile)


def _get(cluster: Cluster, path: str) -> dict[str, Any] | None:
    """The object at `path`, None when the API server says no or cannot be reached.
    A kept connection the server has closed is opened again once."""
    connections: dict[tuple[str, str], http.client.HTTPSConnection] = _local.__dict__.setdefault(
        "connections", {}
    )
    key = (cluster.server, str(cluster.ca))
    headers = {"Authorization": f"Bearer {cluster.admin_token}", "Accept": "application/json"}
    for attempt in (1, 2):
        connection = connections.get(key)
        if connection is None:
            url = urllib.parse.urlsplit(cluster.server)
            connection = http.client.HTTPSConnection(
                url.hostname or "", url.port, context=_tls(key[1]), timeout=60
            )
            connections[key] = connection
        try:
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            del connections[key]
            if attempt == 2:
                return None  # kubectl exits non-zero: unreachable
            continue
        if response.status != 200:
            return None  # not found, refused
        found: dict[str, Any] = json.loads(body)
        return found
    return None


def read(cluster: Cluster, args: tuple[str, ...]) -> tuple[bool, dict[str, Any] | None]:
    """(True, what `kubectl get *args -o json` prints, None where it fails), or
    (False, None) when `args` is not a form read here."""
    found = rest_path(args)
    if found is None:
        return False, None
    path, is_list = found
    body = _get(cluster, path)
    if body is None:
        return True, None
    if not is_list:
        return True, _as_kubectl_prints(body)
    # kubectl prints a list as a v1 List whose items carry their own kind.
    _, _, api_version, kind = _KINDS[args[0]]
    items = [_as_kubectl_prints({"apiVersion": api_version, "kind": kind, **item})
             for item in body.get("items", [])]  # fmt: skip
    return True, {"apiVersion": "v1", "items": items, "kind": "List",
                  "metadata": {"resourceVersion": ""}}  # fmt: skip


def _as_kubectl_prints(obj: dict[str, Any]) -> dict[str, Any]:
    """kubectl leaves out managedFields unless asked (--show-managed-fields)."""
    obj.get("metadata", {}).pop("managedFields", None)
    return obj
