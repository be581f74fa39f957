"""Driver and server error text made safe for the status (`redaction.scrub`, pure):
URIs, users, hosts, addresses and passwords taken out, the error's own words
kept. The real servers' errors: tests/integration/operator/targets/test_redaction.py."""

from __future__ import annotations

from dbbench_operator.redaction import scrub


def leaks(text: str, *secrets: object) -> list[str]:
    return [str(s) for s in secrets if str(s) and str(s) in text]


def test_scrub_takes_out_uris_users_hosts_addresses_and_passwords() -> None:
    raw = (
        "cannot connect to mongodb://bench:pw%21@db-0.db.team-a.svc.cluster.local:27017/?x=1 "
        "(10.244.0.12:27017: [Errno 111] Connection refused); error connecting to master "
        "'dbbench_repl@maria-0.maria.team-a.svc.cluster.local:3306' - retry-time: 60 message: "
        "Access denied for user 'dbbench_repl'@'10.244.0.9' (using password: YES); "
        "Can't connect to MySQL server on 'db.example.com:3306' (111); password=hunter2 "
        "[fd00::1]:3306"
    )
    clean = scrub(raw)
    assert leaks(clean, "bench", "pw%21", "db-0", "svc.cluster.local", "10.244.0.12",
                 "dbbench_repl", "maria-0", "10.244.0.9", "db.example.com", "hunter2",
                 "fd00::1") == []  # fmt: skip
    for kept in ("Connection refused", "Access denied", "retry-time: 60", "(111)"):
        assert kept in clean, clean
