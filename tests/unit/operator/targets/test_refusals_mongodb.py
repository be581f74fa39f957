"""A MongoDB refusal, as the operator explains it (pure): the codes FerretDB and
mongod answer a refused login and a missing privilege with, turned into a reason,
its meaning and where to look. The SQL servers' own refusals:
tests/integration/operator/targets/test_refusals.py."""

from __future__ import annotations

from dbbench_operator.targets import refusals
from dbbench_operator.targets.mongodb.setup import CommandFailedError
from dbbench_operator.targets.refusals import Logs, explain

LOGS = Logs("team-a", "run-db-mysql-0", "mysql")
HINT = "kubectl logs -n team-a run-db-mysql-0 -c mysql"


def test_mongodb_codes_say_what_they_mean() -> None:
    # The codes FerretDB and mongod answer a refused login and a missing privilege with.
    failed = explain("mongodb", CommandFailedError(18, "OperationFailure code 18"), logs=LOGS)
    assert failed.reason == refusals.ACCESS_DENIED
    assert "(MongoDB code 18)" in failed.message
    assert explain("mongodb", CommandFailedError(13, "x")).reason == refusals.PERMISSION_DENIED
    unknown = explain("mongodb", CommandFailedError(9999, "x"), logs=LOGS)
    assert unknown.reason == refusals.SETUP_FAILED
    assert unknown.message.endswith(f"look at the server's log: {HINT}")
