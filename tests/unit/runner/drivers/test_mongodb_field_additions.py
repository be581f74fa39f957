"""MongoDB commands for read-modify-write and the news Tags index switch (the
recording fake client of test_mongodb_driver: the exact calls sent)."""

from __future__ import annotations

from typing import Any

from pymongo import WriteConcern

from dbbench_runner.config import parse_config
from dbbench_runner.operations import Read, ReadModifyWrite
from tests.unit.runner.drivers.test_mongodb_driver import driver, last, reset_fake, step

# The fake's state is reset around each test here too (a failure injected by a test
# of test_mongodb_driver ran into this module's first test on the same worker once).
__all__ = ["reset_fake"]


def test_read_modify_write_reads_the_primary_then_updates() -> None:
    config = step("ycsb", type="mix", mix={"readModifyWrite": 1}, operations=10,
                  readPreference="secondaryPreferred")  # fmt: skip
    d, calls = driver(config)
    d.execute(ReadModifyWrite("user1", {"field0": "x"}))
    read, write = calls[-2], calls[-1]
    # the read goes through the write handle (primary), never to a secondary
    assert read[1:] == ("find_one", ({"_id": "user1"},), {}, {"write_concern": WriteConcern(w=1)})
    assert write[1:] == (
        "update_one",
        ({"_id": "user1"}, {"$set": {"field0": "x"}}),
        {},
        {"write_concern": WriteConcern(w=1)},
    )
    assert last(calls) == write


def test_news_without_the_tags_index() -> None:
    config = parse_config({
        "target": {"name": "mongo", "engine": "mongodb", "uri": "mongodb://db:27017/",
                   "database": "bench", "connectRetries": 2},
        "dataset": {"shape": "news", "records": 100, "tagsIndex": False},
        "phase": {"name": "p", "type": "insert"},
    })  # fmt: skip
    d, calls = driver(config)
    d.prepare()
    names: list[Any] = [kw["name"] for _, m, _, kw, _ in calls if m == "create_index"]
    assert names == ["ix_CategoryID", "ix_CreateTime", "ix_UserID"]


def test_vehicle_reads_the_latest_test_through_its_index() -> None:
    config = step("vehicle", type="mix", mix={"read": 1}, operations=10,
                  readPreference="secondaryPreferred")  # fmt: skip
    d, calls = driver(config)
    d.prepare()
    indexes = [(args, kw["name"]) for _, m, args, kw, _ in calls if m == "create_index"]
    assert indexes == [(([("VehicleID", 1), ("TestDate", -1)],), "ix_VehicleID_TestDate")]
    d.execute(Read(17, secondary_ok=True))
    assert last(calls)[1:4] == ("find_one", ({"VehicleID": 17},), {"sort": [("TestDate", -1)]})
