"""Slow and idle clients, the attacks a server that gives each connection a thread until its
request is read falls to: half-sent request heads (slowloris), bodies trickled a byte at a
time after a burst (slow POST: each gap stays under any per-read timeout), and connections
opened and left silent. Each costs the attacker one socket; the server must keep answering
everyone else.

Shared by the tests that put them against the embedded server and the reverse proxies.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import threading
import time
from dataclasses import dataclass, field

from tests.timing import seconds

HALF_HEAD = b"GET /api/v1/health/live HTTP/1.1\r\nHost: arena\r\nX-Padding: "
# the burst of a slow body, then one byte every TRICKLE_S: the declared length is larger, so
# the request is never complete
BURST = 70 * 1024
DECLARED = 200 * 1024
TRICKLE_S = 7.0


def raise_open_files(need: int) -> None:
    """Let this process hold ``need`` sockets (the soft limit is often 1,024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need, hard), hard))


@dataclass
class SlowClients:
    """``count`` connections of each attack against ``port``, kept going by one thread
    (a header byte or a body byte every :data:`TRICKLE_S`) until closed."""

    port: int
    count: int = 256
    host: str = "127.0.0.1"
    kinds: tuple[str, ...] = ("heads", "bodies", "idle")  # which attacks to open
    heads: list[socket.socket] = field(default_factory=list)
    bodies: list[socket.socket] = field(default_factory=list)
    idle: list[socket.socket] = field(default_factory=list)
    opened: int = 0  # attack connections made and sent their first bytes
    refused: int = 0  # connections the server would not take, or closed at once
    cut: int = 0  # attack connections the server closed while they trickled

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)

    def _connect(self) -> socket.socket | None:
        try:
            return socket.create_connection((self.host, self.port), timeout=seconds(5))
        except OSError:
            self.refused += 1
            return None

    def _send(self, sock: socket.socket, data: bytes) -> bool:
        try:
            sock.sendall(data)
            return True
        except OSError:
            return False

    def open(self) -> SlowClients:
        raise_open_files(3 * self.count + 256)
        head = (b"POST /api/v1/sessions HTTP/1.1\r\nHost: arena\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % DECLARED)
        attacks = {"heads": (self.heads, HALF_HEAD), "bodies": (self.bodies, head + b" " * BURST),
                   "idle": (self.idle, b"")}
        for _ in range(self.count):
            for kept, first in (attacks[kind] for kind in self.kinds):
                sock = self._connect()
                if sock is None:
                    continue
                if first and not self._send(sock, first):
                    self.refused += 1
                    sock.close()
                    continue
                kept.append(sock)
                self.opened += 1
        self._thread.start()
        return self

    def _trickle(self) -> None:
        while not self._stop.wait(TRICKLE_S):
            for kept, byte in ((self.heads, b"x"), (self.bodies, b" ")):
                for sock in list(kept):
                    if not self._send(sock, byte):
                        self.cut += 1
                        kept.remove(sock)
                        sock.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=TRICKLE_S + 5)
        for sock in (*self.heads, *self.bodies, *self.idle):
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> SlowClients:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class HealthWatch:
    """GET ``path`` every ``every`` seconds for ``seconds``, on a new connection each time
    (as a load balancer's checker does): each latency, or None for a failure or a timeout."""

    port: int
    path: str = "/api/v1/health/live"
    every: float = 0.25
    seconds: float = 20.0
    timeout: float = 2.0
    host: str = "127.0.0.1"
    latencies: list[float | None] = field(default_factory=list)

    def probe(self) -> float | None:
        request = (f"GET {self.path} HTTP/1.1\r\nHost: arena\r\nConnection: close\r\n\r\n"
                   .encode())
        started = time.monotonic()
        try:
            with socket.create_connection((self.host, self.port), timeout=self.timeout) as s:
                s.sendall(request)
                answer = s.recv(64)
        except OSError:
            return None
        return time.monotonic() - started if answer.startswith(b"HTTP/1.1 200") else None

    def run(self) -> HealthWatch:
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            self.latencies.append(self.probe())
            time.sleep(self.every)
        return self

    def answered(self, within: float) -> float:
        """The share of checks answered 200 within ``within`` seconds."""
        good = [t for t in self.latencies if t is not None and t <= within]
        return len(good) / max(1, len(self.latencies))

    def worst(self) -> float:
        return max((t if t is not None else float("inf")) for t in self.latencies)


def attacked_health(port: int, count: int = 256, seconds: float = 20.0,
                    path: str = "/api/v1/health/live",
                    kinds: tuple[str, ...] = ("heads", "bodies", "idle"),
                    ) -> tuple[HealthWatch, SlowClients]:
    """Open ``count`` connections of each attack in ``kinds`` on ``port`` and watch its
    health meanwhile."""
    with SlowClients(port, count, kinds=kinds) as attack:
        watch = HealthWatch(port, path=path, seconds=seconds).run()
    return watch, attack
