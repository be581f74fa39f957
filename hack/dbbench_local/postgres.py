"""A real PostgreSQL for tests and benchmarks (Debian's postgresql-15), stopped by PID.

`start_postgres` gives every server a fresh work directory and starts
`postgres` itself (not through pg_ctl, so the PID is the server's) on a free
loopback port, with its own data directory, socket directory and TMPDIR. The
data directory is a copy of one `initdb` per process (0.85 s of CPU each,
the copy 0.05 s), its superuser's password changed to the server's own as
soon as it accepts logins.
`start_standby` copies a running server with `pg_basebackup` (as a standby
pod's init container does) and starts the copy in recovery (`standby.signal`)
without a primary_conninfo: configuring the streaming is the operator's job.

PostgreSQL refuses to run as root. When the tests run as root, every server
process runs as the `postgres` account that Debian's package creates; its
work directory lives under the system temporary directory (pytest's own is
mode 0700, closed to that account) and is removed when the server stops.
Accounts: the superuser `postgres` with a random password over TCP
(scram-sha-256, replication from 127.0.0.1 included), trusted on the socket.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from dbbench_local.ports import BIND_ATTEMPTS, PortInUseError, log_size, port_in_use_in
from dbbench_local.processes import free_port, log_tail, pid_alive

BIN_DIR_ENV = "POSTGRES_BIN_DIR"
DEBIAN_BIN_DIRS = Path("/usr/lib/postgresql")
ACCOUNT = "postgres"
SUPERUSER = "postgres"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


def find_bin_dir() -> Path | None:
    """$POSTGRES_BIN_DIR, else the newest /usr/lib/postgresql/<major>/bin holding `postgres`."""
    configured = os.environ.get(BIN_DIR_ENV)
    if configured:
        return Path(configured) if (Path(configured) / "postgres").exists() else None
    found = [p.parent for p in DEBIAN_BIN_DIRS.glob("*/bin/postgres")]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


@dataclass(frozen=True)
class Account:
    """Who the server processes run as: the caller, or `postgres` when the caller is root."""

    uid: int
    gid: int

    @staticmethod
    def for_server() -> Account | None:
        if os.geteuid() != 0:
            return None
        try:
            entry = pwd.getpwnam(ACCOUNT)
        except KeyError as exc:
            raise RuntimeError(
                f"running as root and no '{ACCOUNT}' account exists: PostgreSQL refuses root; "
                "install postgresql-15 (`make tools`) or run as another user"
            ) from exc
        return Account(entry.pw_uid, entry.pw_gid)


def _identity(account: Account | None) -> tuple[int | None, int | None, list[int] | None]:
    """Popen's user, group and extra_groups: the account's, none of root's groups."""
    if account is None:
        return None, None, None
    return account.uid, account.gid, []


@dataclass
class PostgresServer:
    bin_dir: Path
    work: Path
    port: int
    pid: int
    password: str
    account: Account | None
    user: str = SUPERUSER
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def datadir(self) -> Path:
        return self.work / "data"

    @property
    def socket_dir(self) -> Path:
        return self.work / "sock"

    @property
    def log(self) -> Path:
        return self.work / "postgres.log"

    def connect_args(self, dbname: str = "postgres") -> dict[str, object]:
        """Keyword arguments for psycopg.connect over TCP (what the runner uses)."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "dbname": dbname,
        }

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit superuser connection over TCP."""
        return psycopg.connect(**self.connect_args(dbname), autocommit=True, connect_timeout=10)  # type: ignore[arg-type]

    def binary(self, name: str) -> str:
        return str(self.bin_dir / name)

    def alive(self) -> bool:
        return pid_alive(self.pid, self._process)

    def stop(self) -> None:
        """Fast shutdown (SIGINT) by PID, then SIGQUIT, then SIGKILL; remove the work dir.

        SIGTERM would be a "smart" shutdown that waits for every client to leave.
        """
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
            if not self.alive():
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
        if self._process is not None and self._process.poll() is None:
            self._process.wait(timeout=STOP_TIMEOUT_S)
        shutil.rmtree(self.work, ignore_errors=True)


def _work_dir(account: Account | None) -> Path:
    """A fresh directory the server account owns, with sock/ and tmp/ in it."""
    work = Path(tempfile.mkdtemp(prefix="dbbench-pg-"))
    for sub in ("sock", "tmp"):
        (work / sub).mkdir()
    if account is not None:
        for path in (work, work / "sock", work / "tmp"):
            os.chown(path, account.uid, account.gid)
    return work


def _run(argv: Sequence[str], account: Account | None, log: Path, env: dict[str, str]) -> None:
    user, group, groups = _identity(account)
    with log.open("ab") as out:
        result = subprocess.run(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            check=False,
            user=user,
            group=group,
            extra_groups=groups,
        )
    if result.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} failed ({result.returncode}):\n{log_tail(log)}")


def _env(work: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    return {**keep, "TMPDIR": str(work / "tmp"), "HOME": str(work), **extra}


def _initdb(bin_dir: Path, work: Path, account: Account | None, password: str) -> None:
    pwfile = work / "tmp" / "pw"
    pwfile.write_text(password + "\n")
    pwfile.chmod(0o600)
    if account is not None:
        os.chown(pwfile, account.uid, account.gid)
    try:
        _run(
            [
                str(bin_dir / "initdb"), "-D", str(work / "data"), f"--username={SUPERUSER}",
                f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
                "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions",
            ],
            account, work / "initdb.log", _env(work),
        )  # fmt: skip
    finally:
        pwfile.unlink(missing_ok=True)


def _launch(
    bin_dir: Path, work: Path, account: Account | None, password: str, extra: Sequence[str]
) -> PostgresServer:
    port = free_port()
    argv = [
        str(bin_dir / "postgres"), "-D", str(work / "data"), "-p", str(port),
        "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={work / 'sock'}",
        "-c", "logging_collector=off", *extra,
    ]  # fmt: skip
    user, group, groups = _identity(account)
    with (work / "postgres.log").open("ab") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_env(work),
            user=user,
            group=group,
            extra_groups=groups,
        )
    return PostgresServer(bin_dir, work, port, process.pid, password, account, _process=process)


def _await_login(server: PostgresServer, log_start: int = 0) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        if not server.alive():
            if port_in_use_in(server.log, since=log_start):
                raise PortInUseError(f"postgres: port {server.port} taken before it bound it")
            raise RuntimeError(f"postgres exited during start-up:\n{log_tail(server.log)}")
        try:
            server.connect().close()
        except psycopg.Error as exc:
            last = exc
            time.sleep(0.1)
        else:
            return
    raise RuntimeError(
        f"postgres did not accept logins within {START_TIMEOUT_S:.0f}s (last error: {last}):"
        f"\n{log_tail(server.log)}"
    )


def _start(
    bin_dir: Path, work: Path, account: Account | None, password: str, extra: Sequence[str]
) -> PostgresServer:
    """Launch and wait for a login; a port taken before postgres bound it (port 0
    is not an option: 1-65535) is tried again on another, same data directory."""
    for attempt in range(1, BIND_ATTEMPTS + 1):
        log_start = log_size(work / "postgres.log")
        server = _launch(bin_dir, work, account, password, extra)
        try:
            _await_login(server, log_start)
        except PortInUseError:
            if attempt == BIND_ATTEMPTS:
                server.stop()
                raise
        except BaseException:
            server.stop()
            raise
        else:
            return server
    raise AssertionError("unreachable")


def start_postgres(
    extra_args: Sequence[str] = (), *, bin_dir: Path | None = None
) -> PostgresServer:
    """A fresh cluster (a copy of the initdb'd one), started; `extra_args` are more
    postgres flags (-c k=v)."""
    bin_dir = bin_dir or find_bin_dir()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL server binaries found: run `make tools` (postgresql-15)")
    account = Account.for_server()
    template, template_password = _template(bin_dir, account)
    work = _work_dir(account)
    # cp -a keeps the server account's ownership and the 0700 data directory.
    try:
        subprocess.run(["cp", "-a", str(template), str(work / "data")], check=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    server = _start(bin_dir, work, account, template_password, extra_args)
    password = secrets.token_hex(12)
    try:
        with server.connect() as conn:
            # A server started with log_statement=all would log the password.
            conn.execute("SET log_statement = 'none'")
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(SUPERUSER), sql.Literal(password)))  # fmt: skip
    except BaseException:
        server.stop()
        raise
    server.password = password
    return server


@functools.cache
def _template(bin_dir: Path, account: Account | None) -> tuple[Path, str]:
    """This process's initdb'd data directory and its superuser's password;
    removed when the process exits."""
    work = _work_dir(account)
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    password = secrets.token_hex(12)
    _initdb(bin_dir, work, account, password)
    return work / "data", password


def work_dir_for(primary: PostgresServer) -> Path:
    """A fresh work directory (sock/, tmp/) owned by the primary's server account."""
    return _work_dir(primary.account)


def start_data_dir(
    primary: PostgresServer, work: Path, extra_args: Sequence[str] = ()
) -> PostgresServer:
    """Start a server over `work`/data made by someone else (a chart's init script)."""
    return _start(primary.bin_dir, work, primary.account, primary.password, extra_args)


def start_standby(primary: PostgresServer, extra_args: Sequence[str] = ()) -> PostgresServer:
    """A copy of `primary` by pg_basebackup (WAL streamed with it), started in recovery.

    As a standby pod's init container does: the one-time copy logs in as the
    superuser (the replication role does not exist yet when the pods start),
    and no primary_conninfo is written: the operator's setup configures it.
    """
    account = primary.account
    work = _work_dir(account)
    try:
        _run(
            [
                primary.binary("pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
                "-U", primary.user, "-D", str(work / "data"), "-X", "stream",
                "--checkpoint=fast", "--no-sync",
            ],
            account, work / "basebackup.log", _env(work, PGPASSWORD=primary.password),
        )  # fmt: skip
        signal_file = work / "data" / "standby.signal"
        signal_file.touch()
        if account is not None:
            os.chown(signal_file, account.uid, account.gid)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return _start(primary.bin_dir, work, account, primary.password, extra_args)
