"""The results service key in the chart: its checksum annotation follows the key's
value (a rotated key restarts the pods that read it), `existingSecret` brings your
own, and the service's limits flow from values to its command line.

The render tests run `helm template`; the rotation tests
(tests/integration/chart/test_results_key_rotation.py) render with
`--dry-run=server` against the real kube-apiserver, where the chart's `lookup`
reads the Secret as an upgrade would."""

from __future__ import annotations

import hashlib

from tests.support.helm import Manifest, env_of, one, operator_container, render, template

KEY_ANNOTATION = "checksum/results-key"


def checksum(data_b64: str) -> str:
    return hashlib.sha256(data_b64.encode()).hexdigest()[:16]


def annotations(manifests: list[Manifest]) -> tuple[str, str]:
    """(results service pod, operator pod) checksum annotations."""
    results = one(manifests, "Deployment", component="results")
    operator = one(manifests, "Deployment", component="operator")
    return (
        results["spec"]["template"]["metadata"]["annotations"][KEY_ANNOTATION],
        operator["spec"]["template"]["metadata"]["annotations"][KEY_ANNOTATION],
    )


def results_container(manifests: list[Manifest]) -> Manifest:
    pod = one(manifests, "Deployment", component="results")["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] if c["name"] == "results")


def test_the_checksum_is_the_generated_keys_own() -> None:
    manifests = render()
    key = one(manifests, "Secret", "dbbench-results-key")["data"]["key"]
    # Both pods that read the key carry the checksum of its value, not of a name.
    assert annotations(manifests) == (checksum(key), checksum(key))
    assert annotations(render()) != annotations(manifests)  # a new key, a new checksum


def test_an_existing_secret_is_used_and_none_is_generated() -> None:
    values = {"results": {"existingSecret": "my-results-key", "existingSecretKey": "token"}}
    manifests = render(values)
    assert not [m for m in manifests if m["kind"] == "Secret"]
    env = env_of(operator_container(manifests))
    assert env["DBBENCH_RESULTS_KEY"] == {
        "secretKeyRef": {"name": "my-results-key", "key": "token"}}  # fmt: skip
    pod = one(manifests, "Deployment", component="results")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "key")
    assert volume["secret"]["secretName"] == "my-results-key"
    # The service reads the file `key` whatever the Secret calls it.
    assert volume["secret"]["items"] == [{"key": "token", "path": "key"}]
    assert "--key-file=/var/run/dbbench/results-key/key" in results_container(manifests)["command"]


def test_the_services_limits_come_from_values() -> None:
    values = {"results": {"maxUploadMB": 100, "runQuotaMB": 300, "minFreeMB": 50, "workers": 4,
                          "queue": 8, "requestTimeoutSeconds": 20,
                          "minUploadKiBPerSecond": 512, "reports": "view"}}  # fmt: skip
    command = results_container(render(values))["command"]
    for flag in ("--max-upload-mb=100", "--run-quota-mb=300", "--min-free-mb=50", "--workers=4",
                 "--queue=8", "--request-timeout=20", "--min-rate-kib=512",
                 "--reports=view"):  # fmt: skip
        assert flag in command
    defaults = results_container(render())["command"]
    assert "--reports=upload" in defaults
    assert "--run-quota-mb=2048" in defaults
    assert "--min-free-mb=256" in defaults


def test_reports_is_upload_or_view_and_the_schema_names_it() -> None:
    refused = template({"results": {"reports": "later"}}, check=False)
    assert refused.returncode != 0
    assert "results.reports" in refused.stderr or "/results/reports" in refused.stderr, (
        refused.stderr
    )
    assert "upload" in refused.stderr, refused.stderr
