"""Loopback ports for the servers tests start, and how a server proves it got one.

A port that was free when we looked can be taken before the server binds it
(seen: a MySQL replication fixture failed with "Bind on TCP/IP port: Address
already in use"). Three things close that gap:

- ``free_port`` picks ports *below* the kernel's ephemeral range, so no
  outgoing connection (clients take ephemeral ports) can land on one, and it
  records each port it hands out in a machine-wide ledger for a few minutes,
  so two callers (pytest-xdist workers, other checkouts, the bench) are never
  given the same port while their servers start;
- servers that can report their port bind port 0 (``listening_ports`` reads
  what a PID listens on from /proc): no gap at all;
- the others (mysqld, mariadbd, etcd, kube-apiserver: port 0 means "the
  default" or "off" to them) raise ``PortInUseError`` when they exit on a bind
  error, and their starters retry with a new port (``retry_on_port_in_use``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

__all__ = [
    "PortInUseError",
    "free_port",
    "listening_ports",
    "log_size",
    "port_in_use_in",
    "retry_on_port_in_use",
]

T = TypeVar("T")

# How long a handed-out port stays reserved: longer than any server's start-up.
RESERVE_S = 300.0
# Never hand out well-known or registered-service ports below this.
LOWEST = 10000
BIND_ATTEMPTS = 3
LEDGER = Path(tempfile.gettempdir()) / "dbbench-ports.json"


class PortInUseError(RuntimeError):
    """A server exited because its port was taken between the check and its bind."""


def _port_range() -> tuple[int, int]:
    """[LOWEST, start of the ephemeral range): ports no outgoing connection takes."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 32768  # Linux's default
    if first - LOWEST < 1000:  # a machine with a very wide ephemeral range
        return 1024, max(first - 1, 2047)
    return LOWEST, first - 1


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def _ledger(path: Path) -> Iterator[dict[str, float]]:
    """The ledger's {port: handed-out-at} under an exclusive lock, written back on exit."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    with os.fdopen(fd, "r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            entries = json.loads(handle.read() or "{}")
        except json.JSONDecodeError:  # a writer killed mid-write: start over
            entries = {}
        now = time.time()
        entries = {p: at for p, at in entries.items() if now - float(at) < RESERVE_S}
        yield entries
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(entries))
        handle.flush()


def free_port(ledger: Path | None = None) -> int:
    """A loopback port nothing listens on and no caller on this machine was given lately."""
    low, high = _port_range()
    with _ledger(ledger or LEDGER) as taken:
        for _ in range(500):
            port = random.randint(low, high)  # not a secret: any free port will do
            if str(port) not in taken and _bindable(port):
                taken[str(port)] = time.time()
                return port
    raise RuntimeError(f"no free loopback port in {low}-{high} after 500 tries")


def listening_ports(pid: int) -> set[int]:
    """TCP ports (IPv4 and IPv6) the process ``pid`` listens on, read from /proc."""
    inodes: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = str(fd.readlink())
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
    ports: set[int] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
            for line in lines:
                fields = line.split()
                # local_address is HEXIP:HEXPORT; state 0A is LISTEN; field 9 the inode.
                if len(fields) > 9 and fields[3] == "0A" and fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def log_size(log: Path) -> int:
    """Where a server's next start begins writing in its (appended) log."""
    try:
        return log.stat().st_size
    except OSError:
        return 0


def port_in_use_in(log: Path, since: int = 0) -> bool:
    """True if a server's log (from byte ``since``: this start only) says its port was taken."""
    try:
        with log.open("rb") as handle:
            handle.seek(since)
            text = handle.read().decode(errors="replace").lower()
    except OSError:
        return False
    return "address already in use" in text


def retry_on_port_in_use(start: Callable[[], T], attempts: int = BIND_ATTEMPTS) -> T:
    """``start()`` again (it picks a new port each time) while it raises PortInUseError."""
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except PortInUseError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")
