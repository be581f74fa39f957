"""BenchmarkRuns read from the Kubernetes API (get and list; results go through
results_access: the results browser's Service, found by label, and its proxy).

The client layer: objects arrive here as the API server's JSON and leave as
``Run``, their spec and status in the API's own models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError

from dbbench_contract.api import BenchmarkRunSpec, BenchmarkRunStatus

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException

GROUP, VERSION, PLURAL = "dbbench.io", "v1alpha1", "benchmarkruns"
FINISHED = ("Succeeded", "Failed")


class CliError(Exception):
    """What went wrong and what to do; printed as `error: ...`, exit code 1."""


@dataclass(frozen=True)
class Run:
    """A BenchmarkRun as the CLI shows it."""

    namespace: str
    name: str
    uid: str
    created: str | None  # metadata.creationTimestamp as the API server wrote it
    # None: a spec this dbbench cannot read (written for another version of the CRD).
    spec: BenchmarkRunSpec | None
    status: BenchmarkRunStatus

    @property
    def phase(self) -> str:
        return self.status.phase or "Pending"


def run_of(raw: dict[str, Any]) -> Run:
    """A BenchmarkRun object from the API server, typed. Keys this dbbench's models
    do not know (a newer operator's) are ignored, as in stored files."""
    meta = raw.get("metadata") or {}
    name = str(meta.get("name") or "")
    try:
        spec: BenchmarkRunSpec | None = BenchmarkRunSpec.model_validate(
            raw.get("spec") or {}, extra="ignore"
        )
    except ValidationError:
        spec = None
    try:
        status = BenchmarkRunStatus.model_validate(raw.get("status") or {}, extra="ignore")
    except ValidationError as exc:
        detail = exc.errors()[0]["msg"]
        raise CliError(f"BenchmarkRun {name}: unreadable status ({detail})") from exc
    return Run(
        namespace=str(meta.get("namespace") or ""), name=name, uid=str(meta.get("uid") or ""),
        created=meta.get("creationTimestamp"), spec=spec, status=status,
    )  # fmt: skip


@dataclass(frozen=True)
class Api:
    objects: Any  # kubernetes.client.CustomObjectsApi
    namespace: str
    core: Any = None  # kubernetes.client.CoreV1Api (Services of the results browser)
    client: Any = None  # kubernetes.client.ApiClient (the service proxy)


def api_error() -> type[ApiException]:
    """The Kubernetes client's ApiException (for `except api_error() as exc:`).

    The `kubernetes` package is imported on first use, here and in `connect`:
    it is half of the CLI's start-up (0.18 of 0.35 s), and `check`, `report`,
    `compare` of directories and `history --url` never talk to the API server.
    """
    from kubernetes.client import exceptions  # noqa: PLC0415 - see above

    return cast("type[ApiException]", exceptions.ApiException)


def connect(kubeconfig: str | None, namespace: str | None) -> Api:
    from kubernetes import client, config  # noqa: PLC0415 - see api_error

    try:
        config.load_kube_config(config_file=kubeconfig)
        _, context = config.list_kube_config_contexts(config_file=kubeconfig)
    except (config.ConfigException, OSError) as exc:
        raise CliError(f"cannot load kubeconfig: {exc} (set KUBECONFIG or --kubeconfig)") from exc
    current = (context or {}).get("context", {}).get("namespace") or "default"
    api_client = client.ApiClient()
    return Api(client.CustomObjectsApi(api_client), namespace or current,
               client.CoreV1Api(api_client), api_client)  # fmt: skip


def list_runs(api: Api, all_namespaces: bool) -> list[Run]:
    try:
        if all_namespaces:
            answer = api.objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        else:
            answer = api.objects.list_namespaced_custom_object(
                GROUP, VERSION, api.namespace, PLURAL
            )
    except api_error() as exc:
        raise CliError(f"cannot list BenchmarkRuns: {exc.status} {exc.reason}") from exc
    return [run_of(item) for item in answer.get("items") or []]


def get_run(api: Api, name: str) -> Run:
    try:
        run: dict[str, Any] = api.objects.get_namespaced_custom_object(
            GROUP, VERSION, api.namespace, PLURAL, name
        )
    except api_error() as exc:
        if exc.status == 404:
            raise CliError(
                f"no BenchmarkRun {name!r} in namespace {api.namespace!r} "
                "(`dbbench list -A` shows every run)"
            ) from exc
        raise CliError(f"cannot read BenchmarkRun {name}: {exc.status} {exc.reason}") from exc
    return run_of(run)


def finished_run(api: Api, name: str) -> Run:
    """The run, if its results are complete; CliError naming its phase otherwise."""
    run = get_run(api, name)
    if run.phase not in FINISHED:
        raise CliError(
            f"run {name} is {run.phase}: its results are complete once it is Succeeded or Failed "
            f"(`kubectl get br {name} -w`)"
        )
    return run
