"""Ports handed to the tests' servers (dbbench_local.ports): outside the ephemeral
range and never twice, even to two processes at once; a server's "address already
in use" read from its own start only. The real servers started on a port that is
taken: tests/integration/local/test_ports.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dbbench_local import ports

EPHEMERAL_FIRST = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_free_ports_are_outside_the_ephemeral_range_and_never_handed_out_twice(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.json"
    # Two processes at once, as two xdist workers would be.
    script = (
        "import sys; from pathlib import Path; from dbbench_local.ports import free_port\n"
        "print(*[free_port(Path(sys.argv[1])) for _ in range(200)])\n"
    )
    runs = [
        subprocess.Popen([sys.executable, "-c", script, str(ledger)], stdout=subprocess.PIPE,
                         text=True)
        for _ in range(2)
    ]  # fmt: skip
    handed = [int(port) for run in runs for port in run.communicate(timeout=60)[0].split()]
    assert len(handed) == 400
    assert len(set(handed)) == 400, "a port was handed out twice"
    assert all(ports.LOWEST <= port < EPHEMERAL_FIRST for port in handed)


def test_port_in_use_is_read_from_this_start_only(tmp_path: Path) -> None:
    log = tmp_path / "server.err"
    log.write_text("[ERROR] Can't start server: Bind on TCP/IP port: Address already in use\n")
    since = ports.log_size(log)
    assert ports.port_in_use_in(log)
    assert not ports.port_in_use_in(log, since=since)
    with log.open("a") as out:
        out.write("[ERROR] Do you already have another server running?\n")
    assert not ports.port_in_use_in(log, since=since)
