"""The gunicorn worker ``arena serve`` runs: gunicorn's threaded worker, except that a
request is read in full before a thread is given to it.

gunicorn's ``gthread`` worker hands a connection to a thread as soon as its first bytes
arrive, and the thread then blocks until the request head is complete. Four connections
that each sent half a request head held all four threads, and the service answered nothing
(the operations audit: ``/api/v1/health`` timed out after 15 s). Here the worker's main
loop reads every request head, and every body up to :data:`BUFFERED_BODY` bytes, without
blocking, alongside everything else it waits on; a thread gets the connection once its
request is all there. A client gets :data:`READ_TIMEOUT` seconds to send a request head
(and a small body), else the connection is closed; a larger body (an upload) is read by
the thread, which gives up when the client sends nothing for :data:`STALL_TIMEOUT`
seconds, and the same bound applies to a client that stops reading a response.

A worker whose master dies (kill -9, a crash) closes its listening socket at once and stops
within ``graceful_timeout``: the audit found orphaned workers serving for 30-45 s and
holding the port, so restarting with the README command failed with "Connection in use".

A slow or idle client then costs a socket and a few KB, not a thread: the service answers
with up to ``worker_connections`` (1,000) such clients connected
(``benchmarks/faults.py --only slowloris`` measures it). More than that needs a proxy in
front that limits connections per client (README, Production).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import gc
import os
import re
import selectors
import signal
import time
from functools import partial

from gunicorn.workers.gthread import TConn, ThreadWorker

# seconds a client has to send a whole request head (and a body up to BUFFERED_BODY)
READ_TIMEOUT = 10.0
# seconds a thread waits for the next bytes of a large body, or for a client to read on
STALL_TIMEOUT = 10.0
# bodies up to this size are read before a thread is involved (forms, votes, JSON); with the
# head limit, a worker's 1,000 connections buffer at most ~128 MB
BUFFERED_BODY = 64 * 1024
# a request head longer than this is handed over as it is, for the parser to refuse
HEAD_LIMIT = 64 * 1024
# while the worker stops, a connection that has sent nothing for this long is closed; a
# kept-alive one whose next request is arriving, or one accepted just before, gets it
STOP_GRACE = 1.0

_END_OF_HEAD = b"\r\n\r\n"
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d{1,18})[ \t]*\r\n", re.IGNORECASE)


def request_is_complete(received: bytes) -> bool:
    """Whether a thread can serve ``received`` without waiting on the client: the head is
    complete and so is a body of known length up to :data:`BUFFERED_BODY` (a larger or
    chunked body is streamed by the thread; an overlong head goes to the parser to be
    refused)."""
    end = received.find(_END_OF_HEAD)
    if end < 0:
        return len(received) > HEAD_LIMIT
    head = received[:end + 2]
    if b"\r\ntransfer-encoding:" in head.lower():
        return True
    length = _CONTENT_LENGTH.search(head)
    if length is None:
        return True
    size = int(length.group(1))
    return size > BUFFERED_BODY or len(received) - end - 4 >= size


class BufferedConn(TConn):
    """A connection whose next request is read by the main loop before a thread serves it."""

    def __init__(self, cfg, sock, client, server):
        super().__init__(cfg, sock, client, server)
        self.received = bytearray()
        self.deadline = self.since = 0.0

    def init(self):
        super().init()
        self.sock.settimeout(STALL_TIMEOUT)
        if self.received:
            # after what the parser read ahead before (a pipelined request)
            unreader = self.parser.unreader
            unreader.unread(unreader.take_buffered() + bytes(self.received))
            self.received.clear()


class BufferingWorker(ThreadWorker):
    """gunicorn's threaded worker, with requests read in full before a thread serves them
    (module docstring). ``gunicorn --worker-class arena.infra.worker.BufferingWorker``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reading: dict[BufferedConn, None] = {}

    @classmethod
    def check_config(cls, cfg, log):
        super().check_config(cfg, log)
        if cfg.is_ssl:
            raise RuntimeError("arena's worker serves plain HTTP: terminate TLS in the "
                               "reverse proxy in front of it")

    def init_process(self):
        _signal_on_parent_death(signal.SIGTERM)
        super().init_process()

    def load_wsgi(self):
        super().load_wsgi()
        # What exists once the app is built (the imported modules, the app, its mappers:
        # ~130k objects) lives as long as the worker. Left to the collector, every full
        # collection walked all of it: 50 ms with the GIL held, about once per 1,000
        # requests in-process, a pause a writer lock's holder takes with it. Frozen (after
        # the garbage of loading is collected), collections walk only what came later, the
        # templates and statements the first requests compile included. Under load the
        # vote's p99 moved within the noise of identical runs (docs/performance-log.md,
        # stop 39).
        gc.collect()
        gc.freeze()

    def is_parent_alive(self):
        if super().is_parent_alive():
            return True
        self._close_listeners()
        return False

    def handle_exit(self, sig, frame):
        if self.ppid != os.getppid():  # the master died: free the port for its successor
            self.method_queue.defer(self._close_listeners)  # on the main loop, not here
        super().handle_exit(sig, frame)

    def _close_listeners(self):
        if self._accepting:
            self.set_accept_enabled(False)
        for listener in self.sockets:
            listener.close()

    def accept(self, listener):
        try:
            client_sock, client_addr = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        self._read(BufferedConn(self.cfg, client_sock, client_addr,
                                listener.getsockname()))

    def on_client_socket_readable(self, conn, client):
        """A kept-alive connection has its next request coming: read it first."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._read(conn)

    def _read(self, conn: BufferedConn) -> None:
        conn.sock.setblocking(False)
        conn.since = time.monotonic()
        conn.deadline = conn.since + READ_TIMEOUT
        self.reading[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_bytes, conn))
        # what has arrived is read now, not at the loop's next turn: a stopping worker
        # would close a kept-alive connection whose next request sat unread (a client
        # saw "connection reset" at every release)
        self._on_bytes(conn, conn.sock)

    def _on_bytes(self, conn: BufferedConn, sock) -> None:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client went away
            self._drop(conn)
            return
        conn.received += data
        if request_is_complete(conn.received):
            self.poller.unregister(sock)
            del self.reading[conn]
            conn.data_ready = True
            self.enqueue_req(conn)

    def _drop(self, conn: BufferedConn) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(conn.sock)
        self.reading.pop(conn, None)
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self):
        """Besides gunicorn's pending connections: close those whose request did not
        arrive in time, and those that sent nothing once the worker is stopping."""
        super().murder_pending()
        now = time.monotonic()
        for conn in [c for c in self.reading if c.deadline <= now or not (
                self.alive or c.received or now - c.since < STOP_GRACE)]:
            self._drop(conn)  # late, or idle while the worker stops


def _signal_on_parent_death(signum: int) -> None:
    """Ask Linux to send ``signum`` to this process when its parent dies (no-op elsewhere)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signum), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
