"""A real MongoDB-protocol server (FerretDB, SQLite backend) for tests, stopped by PID.

No `mongod` can be installed on the development and CI machines; FerretDB
v1.24.0, built by `make tools` with a fix for unacknowledged (w:0) writes
(hack/ferretdb-w0.patch), speaks wire version 21 and runs the runner's
MongoDB driver contract. It implements no replica sets, sharding, users or
transactions: that setup is checked on exact commands instead (README).
Every query is a table scan: use it for correctness, never for speed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymongo

from dbbench_local.ports import listening_ports
from dbbench_local.processes import log_tail, stop_pid

FERRETDB = "ferretdb"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


def ferretdb_binary() -> str | None:
    """`ferretdb` on PATH (make tools puts it in $TOOLS_DIR/bin)."""
    return shutil.which(FERRETDB)


@dataclass
class FerretDBServer:
    port: int
    pid: int
    base_dir: Path
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/"

    @property
    def log(self) -> Path:
        return self.base_dir / "ferretdb.log"

    def stop(self) -> None:
        """SIGTERM by PID, wait, SIGKILL after a timeout; idempotent."""
        stop_pid(self.pid, self._process, STOP_TIMEOUT_S, poll=0.05)


def _wait_ready(server: FerretDBServer) -> None:
    """Wait for the port it bound (it was given port 0) and for it to answer there."""
    deadline = time.monotonic() + START_TIMEOUT_S
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if server._process is not None and server._process.poll() is not None:
            raise RuntimeError(
                f"ferretdb exited with {server._process.returncode} during start-up:\n"
                f"{log_tail(server.log)}"
            )
        if not server.port:
            ports = listening_ports(server.pid)
            if len(ports) > 1:
                raise RuntimeError(f"ferretdb listens on {sorted(ports)}: expected one port")
            if not ports:
                time.sleep(0.05)
                continue
            (server.port,) = ports
        client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(
            server.uri, serverSelectionTimeoutMS=500, connectTimeoutMS=500
        )
        try:
            client.admin.command("ping")
        except pymongo.errors.PyMongoError as exc:
            last_error = exc
        else:
            return
        finally:
            client.close()
        time.sleep(0.1)
    raise RuntimeError(
        f"ferretdb did not answer within {START_TIMEOUT_S:.0f}s (last error: {last_error}):\n"
        f"{log_tail(server.log)}"
    )


def start_ferretdb(base_dir: Path, *, binary: str | None = None) -> FerretDBServer:
    """Start FerretDB on a loopback port it picks (port 0) with its SQLite files under base_dir."""
    binary = binary or ferretdb_binary()
    if binary is None:
        raise RuntimeError("ferretdb not found on PATH: run `make tools`")
    base_dir = Path(base_dir)
    data, state = base_dir / "data", base_dir / "state"
    data.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    argv = [
        binary,
        "--handler=sqlite",
        f"--sqlite-url=file:{data}/",
        f"--state-dir={state}",
        # Port 0: the kernel picks a free port at bind time, so none can be taken
        # in between; _wait_ready reads which one from /proc.
        "--listen-addr=127.0.0.1:0",
        "--debug-addr=-",
        "--telemetry=disable",
        "--log-level=warn",
    ]
    with (base_dir / "ferretdb.log").open("wb") as log:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    server = FerretDBServer(port=0, pid=process.pid, base_dir=base_dir, _process=process)
    try:
        _wait_ready(server)
    except BaseException:
        server.stop()
        raise
    return server
