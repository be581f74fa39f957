"""A bounded HTTP server: a fixed pool of workers, a bounded queue, a deadline per request.

The standard library's ThreadingHTTPServer starts one thread per connection,
without bound, and a client that stops sending holds its thread for as long
as it likes. Here:

- `workers` threads serve connections; accepted connections wait in a queue
  of `queue` places; past that, the acceptor answers 503 with Retry-After
  itself and closes (clients retry), so memory and threads stay bounded;
- every request has a deadline (headers within the request timeout; a body
  at a minimum rate), and a watchdog shuts down the socket of a request past
  it, which frees its worker even from a client that trickles a byte at a time.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from http.server import HTTPServer
from typing import Any

log = logging.getLogger(__name__)

RETRY_AFTER_S = 2
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: %d\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
)


def busy_response(workers: int, waiting: int) -> bytes:
    body = (
        b'{"error": "the results service is busy (%d requests served, %d waiting: '
        b'results.workers, results.queue); retry after %d s", "limit": "results.queue"}'
        % (workers, waiting, RETRY_AFTER_S)
    )
    return _BUSY % (RETRY_AFTER_S, len(body), body)


class Watchdog:
    """Shuts down the sockets of requests past their deadline (checked twice a second)."""

    def __init__(self) -> None:
        self._deadlines: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def watch(self, sock: socket.socket, seconds: float | None) -> None:
        """Give `sock` until `seconds` from now (None: no deadline; the socket timeout stays)."""
        with self._lock:
            if seconds is None:
                self._deadlines.pop(sock, None)
            else:
                self._deadlines[sock] = time.monotonic() + seconds

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            now = time.monotonic()
            with self._lock:
                late = [s for s, deadline in self._deadlines.items() if deadline < now]
                for sock in late:
                    del self._deadlines[sock]
            for sock in late:
                log.warning("request from %s past its deadline: closing it", _peer(sock))
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def _peer(sock: socket.socket) -> str:
    try:
        return str(sock.getpeername()[0])
    except OSError:
        return "?"


class BoundedHTTPServer(HTTPServer):
    # Every runner pod of a step uploads at the same moment; the default
    # listen backlog of 5 made the kernel reset some of those connections.
    request_queue_size = 256

    def __init__(
        self, address: tuple[str, int], handler: Any, *, workers: int, waiting: int
    ) -> None:
        super().__init__(address, handler)
        self.workers = workers
        self.waiting = waiting
        self.watchdog = Watchdog()
        self._queue: queue.Queue[tuple[socket.socket, Any] | None] = queue.Queue(waiting)
        self._threads = [
            threading.Thread(target=self._work, name=f"worker-{i}", daemon=True)
            for i in range(workers)
        ]
        self.watchdog.start()
        for thread in self._threads:
            thread.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            self._queue.put_nowait((request, client_address))
        except queue.Full:
            self._refuse(request)

    def _refuse(self, request: socket.socket) -> None:
        # The acceptor must not block on a client: a short send, then close.
        with contextlib.suppress(OSError):
            request.settimeout(1.0)
            request.sendall(busy_response(self.workers, self.waiting))
            request.shutdown(socket.SHUT_WR)
        self.shutdown_request(request)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            request, client_address = item
            try:
                self.finish_request(request, client_address)
            except Exception:  # noqa: BLE001 - one bad connection never ends a worker
                self.handle_error(request, client_address)
            finally:
                self.watchdog.watch(request, None)
                self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        del request
        log.warning("connection from %s ended with an error", client_address, exc_info=True)

    def server_close(self) -> None:
        super().server_close()
        self.watchdog.stop()
        for _ in self._threads:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(None)
