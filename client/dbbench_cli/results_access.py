"""How the CLI reaches the results browser.

By default through the Kubernetes API server's service proxy
(``/api/v1/namespaces/<ns>/services/<svc>:http/proxy/...``) with the user's
kubeconfig, so nothing has to be forwarded or exposed by hand and the user's
RBAC decides (``services/proxy`` get on the browser's Service; the chart's
``<fullname>-view`` role grants it). The Service is found by its label, not by
name; `--url` (or ``DBBENCH_URL``) names a browser directly instead.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from dbbench_cli.kube import Api, CliError, api_error

SELECTOR = "app.kubernetes.io/component=results-browser"
CLAIM_ANNOTATION = "dbbench.io/results-claim"
READER_ROLE_ANNOTATION = "dbbench.io/reader-role"
# Where the chart's docs install it: looked at when the user may not list
# Services in every namespace.
DEFAULT_RELEASE_NAMESPACE = "dbbench-system"
TIMEOUT_S = (15, 120)  # connect, and each read of a streamed answer


class Endpoint(Protocol):
    """A results browser: GET a path below its root."""

    @property
    def description(self) -> str: ...

    def get(self, path: str) -> bytes: ...

    def stream(self, path: str) -> Any: ...  # a context manager yielding a binary stream


@dataclass(frozen=True)
class UrlEndpoint:
    """A browser at a URL (`--url`): a port-forward, an ingress, a test server."""

    base: str

    @property
    def description(self) -> str:
        return f"the results browser at {self.base}"

    def _open(self, path: str) -> Any:
        url = f"{self.base.rstrip('/')}/{path}"
        try:
            return urllib.request.urlopen(url, timeout=TIMEOUT_S[1])  # noqa: S310 - http(s) only
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip()
            raise CliError(f"{url}: {exc.code} {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise CliError(
                f"cannot reach the results browser at {url}: {exc}. Leave out --url "
                "(and DBBENCH_URL) to go through the Kubernetes API server instead"
            ) from exc

    def get(self, path: str) -> bytes:
        with self._open(path) as answer:
            data: bytes = answer.read()
            return data

    @contextmanager
    def stream(self, path: str) -> Iterator[BinaryIO]:
        with self._open(path) as answer:
            yield answer


@dataclass(frozen=True)
class Service:
    namespace: str
    name: str
    port: str
    reader_role: str | None
    claim: str | None  # the results claim it serves (chart annotation)

    def __str__(self) -> str:
        return f"svc/{self.name} in namespace {self.namespace}"


@dataclass(frozen=True)
class ProxyEndpoint:
    """The browser's Service through the API server's service proxy (the user's identity)."""

    api: Api
    service: Service

    @property
    def description(self) -> str:
        return f"the results browser {self.service} (through the Kubernetes API server)"

    def _path(self, path: str) -> str:
        s = self.service
        return f"/api/v1/namespaces/{s.namespace}/services/{s.name}:{s.port}/proxy/{path}"

    def _open(self, path: str) -> Any:
        client = self.api.client
        method, url, headers, _, _ = client.param_serialize(
            "GET", self._path(path), header_params={"Accept": "*/*"},
            auth_settings=["BearerToken"],
        )  # fmt: skip
        try:
            answer = client.call_api(method, url, header_params=headers,
                                     _request_timeout=TIMEOUT_S)  # fmt: skip
        except api_error() as exc:
            raise CliError(f"cannot reach the Kubernetes API server: {exc.reason}") from exc
        if answer.status >= 300:
            body = answer.read()
            answer.response.release_conn()
            raise CliError(self._explain(answer.status, body, path))
        return answer.response

    def _explain(self, status: int, body: bytes, path: str) -> str:
        s = self.service
        detail = _status_message(body)
        if status == 403:
            role = s.reader_role or "<release>-dbbench-results-reader"
            return (
                f"forbidden to read results through {s}: {detail}. The CLI needs `get` on "
                f"`services/proxy` for {s.name} there (the chart's Role {role} grants it, "
                f"and so do view/edit/admin in {s.namespace}): kubectl -n {s.namespace} "
                f"create rolebinding dbbench-results-reader --role={role} --user=<you>, "
                "or list the readers in the chart value rbac.resultsReaders"
            )
        if status in (502, 503) and "error trying to reach service" in detail:
            return (
                f"the Kubernetes API server could not connect to {s} ({detail}): where "
                "NetworkPolicies are enforced, allow the control plane's address to the "
                "browser's port with the chart value networkPolicy.browserFrom (e.g. "
                "[{ipBlock: {cidr: <API server address>/32}}]); else check the results pod: "
                f"kubectl -n {s.namespace} get pods -l app.kubernetes.io/component=results"
            )
        if status == 503 or (status == 404 and "endpoints" in detail):
            return (
                f"{s} has no ready endpoint ({detail}): the results pod is not running or "
                f"not ready: kubectl -n {s.namespace} get pods "
                "-l app.kubernetes.io/component=results"
            )
        if status == 401:
            return f"the Kubernetes API server refused your credentials ({detail}): see KUBECONFIG"
        return f"{s}: GET {path}: {status} {detail}"

    def get(self, path: str) -> bytes:
        answer = self._open(path)
        try:
            data: bytes = answer.read()
            return data
        finally:
            answer.release_conn()

    @contextmanager
    def stream(self, path: str) -> Iterator[BinaryIO]:
        answer = self._open(path)
        try:
            yield answer
        finally:
            answer.release_conn()


def _status_message(body: bytes) -> str:
    """The message of a Kubernetes Status answer, or the body's text."""
    text = body.decode(errors="replace").strip()
    try:
        status = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(status, dict) and status.get("kind") == "Status":
        return str(status.get("message") or status.get("reason") or text)[:500]
    return text[:300]


def _services(items: list[Any]) -> list[Service]:
    found = []
    for item in items:
        meta, spec = item.metadata, item.spec
        ports = [p.name or str(p.port) for p in spec.ports or []]
        annotations = meta.annotations or {}
        found.append(Service(
            meta.namespace, meta.name, "http" if "http" in ports else ports[0],
            annotations.get(READER_ROLE_ANNOTATION), annotations.get(CLAIM_ANNOTATION),
        ))  # fmt: skip
    return found


def candidates(api: Api, namespaces: list[str]) -> tuple[list[Service], list[str]]:
    """Results browser Services by label: everywhere when the user may list
    Services cluster-wide, else in `namespaces`; and what could not be looked at."""
    core, refused = api.core, []
    if not namespaces:
        try:
            listed = core.list_service_for_all_namespaces(label_selector=SELECTOR)
            return _services(listed.items), []
        except api_error() as exc:
            if exc.status != 403:
                raise CliError(f"cannot list Services: {exc.status} {exc.reason}") from exc
            refused.append(f"all namespaces ({exc.status})")
        namespaces = list(dict.fromkeys([api.namespace, DEFAULT_RELEASE_NAMESPACE]))
    found: list[Service] = []
    for namespace in namespaces:
        try:
            listed = core.list_namespaced_service(namespace, label_selector=SELECTOR)
        except api_error() as exc:
            refused.append(f"{namespace} ({exc.status} {exc.reason})")
            continue
        found += _services(listed.items)
    return found, refused


def locate(api: Api, claim: str | None, results_namespace: str | None) -> ProxyEndpoint:
    """The results browser of the release that holds the run's claim."""
    found, refused = candidates(api, [results_namespace] if results_namespace else [])
    matching = [s for s in found if claim is not None and s.claim == claim] or found
    if len(matching) == 1:
        return ProxyEndpoint(api, matching[0])
    where = f"; could not list Services in {', '.join(refused)}" if refused else ""
    if not matching:
        raise CliError(
            f"no results browser Service (label {SELECTOR}) found{where}. Install the chart "
            "(its results browser is on by default: results.browser.enabled), name the "
            "chart's namespace with --results-namespace (or DBBENCH_RESULTS_NAMESPACE), "
            "or give the browser's address with --url"
        )
    names = ", ".join(str(s) for s in matching)
    raise CliError(
        f"several results browsers ({names}) and none holds claim {claim!r} only: "
        "choose one with --results-namespace"
    )
