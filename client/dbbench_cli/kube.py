"""BenchmarkRuns read from the Kubernetes API (get and list; results go through
results_access: the results browser's Service, found by label, and its proxy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

GROUP, VERSION, PLURAL = "dbbench.io", "v1alpha1", "benchmarkruns"
FINISHED = ("Succeeded", "Failed")


class CliError(Exception):
    """What went wrong and what to do; printed as `error: ...`, exit code 1."""


@dataclass(frozen=True)
class Api:
    objects: Any  # kubernetes.client.CustomObjectsApi
    namespace: str
    core: Any = None  # kubernetes.client.CoreV1Api (Services of the results browser)
    client: Any = None  # kubernetes.client.ApiClient (the service proxy)


def connect(kubeconfig: str | None, namespace: str | None) -> Api:
    try:
        config.load_kube_config(config_file=kubeconfig)
        _, context = config.list_kube_config_contexts(config_file=kubeconfig)
    except (config.ConfigException, OSError) as exc:
        raise CliError(f"cannot load kubeconfig: {exc} (set KUBECONFIG or --kubeconfig)") from exc
    current = (context or {}).get("context", {}).get("namespace") or "default"
    api_client = client.ApiClient()
    return Api(client.CustomObjectsApi(api_client), namespace or current,
               client.CoreV1Api(api_client), api_client)  # fmt: skip


def list_runs(api: Api, all_namespaces: bool) -> list[dict[str, Any]]:
    try:
        if all_namespaces:
            answer = api.objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        else:
            answer = api.objects.list_namespaced_custom_object(
                GROUP, VERSION, api.namespace, PLURAL
            )
    except ApiException as exc:
        raise CliError(f"cannot list BenchmarkRuns: {exc.status} {exc.reason}") from exc
    return list(answer.get("items") or [])


def get_run(api: Api, name: str) -> dict[str, Any]:
    try:
        run: dict[str, Any] = api.objects.get_namespaced_custom_object(
            GROUP, VERSION, api.namespace, PLURAL, name
        )
    except ApiException as exc:
        if exc.status == 404:
            raise CliError(
                f"no BenchmarkRun {name!r} in namespace {api.namespace!r} "
                "(`dbbench list -A` shows every run)"
            ) from exc
        raise CliError(f"cannot read BenchmarkRun {name}: {exc.status} {exc.reason}") from exc
    return run


def finished_run(api: Api, name: str) -> dict[str, Any]:
    """The run, if its results are complete; CliError naming its phase otherwise."""
    run = get_run(api, name)
    phase = (run.get("status") or {}).get("phase") or "Pending"
    if phase not in FINISHED:
        raise CliError(
            f"run {name} is {phase}: its results are complete once it is Succeeded or Failed "
            f"(`kubectl get br {name} -w`)"
        )
    return run
