"""Nothing blocks forever: an API server or a database that accepts the
connection and never answers (real sockets on loopback that stay silent, and a
proxy that stops forwarding mid-session in front of a real MariaDB and
FerretDB) fails each call within its timeout, and a pass that hangs is
abandoned at its deadline, or at spec.timeout, which then ends the run."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import mysql.connector
import pytest
import yaml

from dbbench_contract.api.status import BenchmarkRunStatus
from dbbench_operator import deadlines
from dbbench_operator.controller.pass_timing import next_wait
from dbbench_operator.controller.reconciling import reconcile_within
from dbbench_operator.k8s import api
from dbbench_operator.k8s.api import KubeError
from dbbench_operator.naming import RunRef
from dbbench_operator.settings import OperatorSettings
from dbbench_operator.targets.mongodb import client
from dbbench_operator.targets.mongodb.setup import UnreachableError
from dbbench_operator.targets.sql import session as sql_session
from tests.fixtures.controlplane import forget_kube_clients
from tests.fixtures.ferretdb import FerretDBServer
from tests.fixtures.mariadb import MariaDBServer
from tests.fixtures.silent import FreezableProxy, SilentServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
RUN = RunRef(name="hung", namespace="team-a", uid="uid-hung", generation=1)


def kubeconfig(path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "silent",
        "clusters": [{"name": "silent", "cluster": {"server": server,
                                                     "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "u"}}],
    }  # fmt: skip
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def silent_api(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[SilentServer]:
    """The operator's client points at an API server that accepts and never answers."""
    scheme = getattr(request, "param", "http")
    with (
        SilentServer() as server,
        client_pointed_at(monkeypatch, tmp_path, f"{scheme}://127.0.0.1:{server.port}"),
    ):
        yield server


@contextlib.contextmanager
def client_pointed_at(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str) -> Iterator[None]:
    """The operator's cached client talks to ``url`` for the block, and is rebuilt after."""
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "kubeconfig", url)))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    forget_kube_clients()
    try:
        yield
    finally:
        forget_kube_clients()


def timed(fn: Any) -> tuple[float, BaseException | None]:
    started = time.monotonic()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


@pytest.mark.parametrize("silent_api", ["http", "https"], indirect=True)
def test_an_api_server_that_never_answers_fails_the_call_within_its_timeout(
    silent_api: SilentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBBENCH_API_TIMEOUT", "1.5")
    elapsed, error = timed(lambda: api.get("apps/v1", "StatefulSet", "team-a", "db"))
    assert isinstance(error, KubeError), error
    assert error.status == 0
    assert "no answer from the API server" in str(error)
    # Connect (https: the TLS handshake) or read timeout, with the few retries allowed.
    assert elapsed < 8, f"took {elapsed:.1f}s"


def quickstart(**overrides: Any) -> dict[str, Any]:
    spec = dict(yaml.safe_load((REPO / "examples" / "quickstart.yaml").read_text())["spec"])
    spec.update(overrides)
    return spec


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_pass_stuck_on_the_api_is_abandoned_at_its_deadline(
    silent_api: SilentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBBENCH_API_TIMEOUT", "300")  # the call alone would wait 5 minutes
    settings = OperatorSettings(pass_deadline=2, api_timeout=300)
    now = datetime.now(UTC)
    status = {"phase": "Provisioning", "startedAt": stamp(now - timedelta(minutes=1))}
    started = time.monotonic()
    outcome = reconcile_within(RUN, quickstart(), status, now, settings)
    elapsed = time.monotonic() - started
    assert elapsed < 4, f"took {elapsed:.1f}s"
    assert "phase" not in outcome.status  # a failed pass: retried, the run goes on
    assert outcome.status["failedPasses"] == 1
    reconciled = next(c for c in outcome.status["conditions"] if c["type"] == "Reconciled")
    assert (reconciled["status"], reconciled["reason"]) == ("False", "PassTimedOut")
    assert "did not finish within 2s" in reconciled["message"]
    assert [(kind, reason) for kind, reason, _ in outcome.events] == [("Warning", "PassTimedOut")]
    BenchmarkRunStatus.model_validate(outcome.status)


def test_a_pass_stuck_past_spec_timeout_ends_the_run_at_the_timeout(
    silent_api: SilentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBBENCH_API_TIMEOUT", "300")
    settings = OperatorSettings(pass_deadline=3, api_timeout=300)
    now = datetime.now(UTC)
    # 15m timeout, 2 seconds left: the pass starts, hangs, and the clock runs out.
    status = {"phase": "Provisioning", "startedAt": stamp(now - timedelta(minutes=15) +
                                                           timedelta(seconds=2))}  # fmt: skip
    started = time.monotonic()
    outcome = reconcile_within(RUN, quickstart(), status, now, settings)
    elapsed = time.monotonic() - started
    # At the timeout (about 3 s), plus the cleanup's own bounded attempt (3 s).
    assert elapsed < 8.5, f"took {elapsed:.1f}s"
    assert outcome.status["phase"] == "Failed"
    failed = next(c for c in outcome.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "Timeout"
    assert "cleanedUp" not in outcome.status  # retried by later passes
    BenchmarkRunStatus.model_validate(outcome.status)


def test_an_abandoned_pass_makes_no_further_api_call() -> None:
    calls: list[str] = []

    def stuck_then_call() -> None:
        time.sleep(1.5)
        deadlines.check("apply StatefulSet x")  # what kube does before every call
        calls.append("called")

    with pytest.raises(deadlines.PassDeadlineError):
        deadlines.call_within(stuck_then_call, 0.5, "test")
    time.sleep(1.5)
    assert calls == []


def test_mongodb_admin_calls_end_when_the_server_goes_silent(ferretdb: FerretDBServer) -> None:
    with FreezableProxy(ferretdb.port) as proxy:
        admin = client.connect(
            f"127.0.0.1:{proxy.port}", username=None, password=None, socket_timeout_ms=1500
        )
        try:
            assert admin.admin_command({"ping": 1})["ok"] == 1
            # Only the command's connection hangs: pymongo's monitors see a healthy
            # server and would never interrupt it; the socket timeout must.
            proxy.freeze_next()
            elapsed, error = timed(lambda: admin.admin_command({"ping": 1}))
        finally:
            admin.close()
    assert isinstance(error, UnreachableError), error
    assert elapsed < 10, f"took {elapsed:.1f}s"


def test_mongodb_admin_connect_to_a_silent_port_ends() -> None:
    with SilentServer() as server:
        admin = client.connect(
            f"127.0.0.1:{server.port}", username=None, password=None, timeout_ms=1000
        )
        elapsed, error = timed(lambda: admin.admin_command({"ping": 1}))
        admin.close()
    assert isinstance(error, UnreachableError), error
    assert elapsed < 6, f"took {elapsed:.1f}s"


def test_a_mysql_session_ends_when_the_server_goes_silent(mariadb: MariaDBServer) -> None:
    with FreezableProxy(mariadb.port) as proxy:
        session = sql_session.connect(
            "127.0.0.1", proxy.port, "root", mariadb.root_password, read_timeout_s=2
        )
        try:
            assert session.query("SELECT 1 AS one") == [{"one": 1}]
            proxy.freeze()
            elapsed, error = timed(lambda: session.query("SELECT 2 AS two"))
        finally:
            with contextlib.suppress(mysql.connector.Error):
                session.close()
    assert isinstance(error, mysql.connector.Error), error
    assert elapsed < 8, f"took {elapsed:.1f}s"


def test_a_mysql_connect_to_a_silent_port_ends() -> None:
    with SilentServer() as server:
        elapsed, error = timed(
            lambda: sql_session.connect("127.0.0.1", server.port, "root", "x", timeout_s=2)
        )
    assert isinstance(error, mysql.connector.Error), error
    assert elapsed < 8, f"took {elapsed:.1f}s"


def test_kopfs_own_api_calls_are_bounded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import kopf  # noqa: PLC0415 - only this test needs kopf's settings

    from dbbench_operator.handlers import configure  # noqa: PLC0415

    monkeypatch.setenv("DBBENCH_API_TIMEOUT", "20")
    settings = kopf.OperatorSettings()
    assert settings.networking.request_timeout == 300  # kopf's default: 5 minutes
    configure(settings=settings)
    assert settings.networking.request_timeout == 20
    assert settings.networking.connect_timeout == 10


class _Throttling(ThreadingHTTPServer):
    """An API server that throttles every request, as API Priority and Fairness
    does under load: 429 with a Status body and Retry-After."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "message": "Too many requests, please try again later.",
                                   "reason": "TooManyRequests", "code": 429}).encode()  # fmt: skip
                self.send_response(429)
                self.send_header("Content-Type", "application/json")
                self.send_header("Retry-After", "7")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_PATCH = do_PUT = do_DELETE = do_GET  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def throttling_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    server = _Throttling()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with client_pointed_at(
            monkeypatch, tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
        ):
            yield
    finally:
        server.shutdown()
        server.server_close()


def _passes_over_two_minutes(settings: OperatorSettings) -> list[Any]:
    """Passes 30 s apart (past the failure budget's window and count) on one status."""
    started = datetime.now(UTC)
    status: dict[str, Any] = {"phase": "Provisioning", "startedAt": stamp(started)}
    outcomes = []
    for i in range(5):
        outcome = reconcile_within(RUN, quickstart(), status, started + timedelta(seconds=30 * i),
                                   settings)  # fmt: skip
        outcomes.append(outcome)
        status = {**status, **outcome.status}
    return outcomes


@pytest.mark.parametrize("cluster", ["throttling_api", "silent_api"])
def test_a_busy_or_absent_api_server_never_counts_against_the_failure_budget(
    cluster: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy cluster must not fail runs in bulk: 429s and calls without an answer
    are retried pass after pass (here 5 passes over 2 minutes, against a budget of
    3 passes in 60 s), with a condition naming the cause and no Event."""
    monkeypatch.setenv("DBBENCH_API_TIMEOUT", "1")
    request.getfixturevalue(cluster)
    settings = OperatorSettings(pass_deadline=30, api_timeout=1, pass_error_limit=3,
                                pass_error_window=60)  # fmt: skip
    outcomes = _passes_over_two_minutes(settings)
    assert len(outcomes) == 5
    for outcome in outcomes:
        assert "phase" not in outcome.status, outcome.status  # never Failed
        assert "failedPasses" not in outcome.status
        assert outcome.events == ()
        reconciled = next(c for c in outcome.status["conditions"] if c["type"] == "Reconciled")
        assert reconciled["reason"] == "ApiServerUnavailable"
        expected = "429" if cluster == "throttling_api" else "no answer from the API server"
        assert expected in reconciled["message"]
        BenchmarkRunStatus.model_validate(outcome.status)
        # The next pass backs off, as long as the server asked when it did, and a
        # change of the run's children does not cut the back-off short.
        assert outcome.busy
        assert outcome.retry_after == (7 if cluster == "throttling_api" else None)
        wait = next_wait(outcome.status, settings, busy_passes=1, retry_after=outcome.retry_after)
        assert wait.seconds >= (7 if cluster == "throttling_api" else settings.reconcile_interval)
        assert not wait.wakeable


def test_a_busy_api_server_still_ends_the_run_at_spec_timeout(throttling_api: None) -> None:
    now = datetime.now(UTC)
    status = {"phase": "Running", "startedAt": stamp(now - timedelta(minutes=16))}  # 15m timeout
    outcome = reconcile_within(RUN, quickstart(), status, now, OperatorSettings(pass_deadline=30))
    assert outcome.status["phase"] == "Failed"
    failed = next(c for c in outcome.status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "Timeout"
