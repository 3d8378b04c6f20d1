"""Work that must not delay, or show in the timing of, the response that asked for it.

In a request, :func:`after_response` runs the work once the response has been sent (WSGI
``close``), in a fresh application context; outside one (the command line, simulations,
tests calling services) it runs at once. Making a gold pair takes tens of milliseconds: done
inside the request that serves it, that time told a script which session held the gold.

Work sent with ``retry=True`` that a database outage stops (PostgreSQL restarting, a killed
connection) is kept and run again after a later response of this process, waiting from
``RETRY_WAIT_S`` seconds, twice as long each time, for up to ``RETRY_ATTEMPTS`` tries (about
ten minutes): the need that asked for it may never be seen again otherwise.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from flask import Flask, after_this_request, current_app, has_request_context

from arena.errors import Unavailable
from arena.extensions import db
from arena.infra.database import database_outage

log = logging.getLogger(__name__)
RETRY_ATTEMPTS = 12
RETRY_WAIT_S = 1.0
RETRY_WAIT_MAX_S = 120.0
PENDING_MAX = 256  # work kept per process; the oldest is dropped beyond


class Pending:
    """The work an outage stopped, each with its tries so far and when it is due (one per
    app)."""

    def __init__(self):
        self.work: deque[tuple[object, tuple, dict, int, float]] = deque(maxlen=PENDING_MAX)
        self.lock = threading.Lock()

    def add(self, fn, args: tuple, kwargs: dict, attempts: int) -> None:
        wait = min(RETRY_WAIT_S * 2 ** (attempts - 1), RETRY_WAIT_MAX_S)
        with self.lock:
            self.work.append((fn, args, kwargs, attempts, time.monotonic() + wait))

    def take_due(self) -> list[tuple]:
        """The work due now, taken out; the rest stays."""
        now = time.monotonic()
        with self.lock:
            due = [item for item in self.work if item[4] <= now]
            if due:
                kept = [item for item in self.work if item[4] > now]
                self.work.clear()
                self.work.extend(kept)
        return due


def after_response(fn, /, *args, retry: bool = False, **kwargs) -> None:
    """Run ``fn(*args, **kwargs)`` after the response (at once outside a request); with
    ``retry``, again after later responses while a database outage makes it fail."""
    if not has_request_context():
        fn(*args, **kwargs)
        return
    app = current_app._get_current_object()
    attempts = 0 if retry else RETRY_ATTEMPTS

    @after_this_request
    def schedule(response):
        response.call_on_close(lambda: _run(app, fn, args, kwargs, attempts))
        return response


def _run(app: Flask, fn, args: tuple, kwargs: dict, attempts: int) -> None:
    with app.app_context():
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # the response is gone: log, never raise into the server
            db.session.rollback()
            if attempts + 1 < RETRY_ATTEMPTS and _outage(exc):
                log.warning("deferred %s stopped by the database (%s): tried again later",
                            getattr(fn, "__name__", fn), exc)
                app.extensions["arena_deferred"].add(fn, args, kwargs, attempts + 1)
            else:
                log.exception("deferred %s failed", getattr(fn, "__name__", fn))
        finally:
            db.session.remove()


def _outage(exc: Exception) -> bool:
    return isinstance(exc, Unavailable) or database_outage(exc) is not None


def init_app(app: Flask) -> None:
    """After every response of ``app``: run again the work an outage stopped, if any."""
    pending = app.extensions["arena_deferred"] = Pending()

    @app.after_request
    def retry_pending(response):
        if pending.work:  # (a deque's length: nothing more on most responses)
            for fn, args, kwargs, attempts, _ in pending.take_due():
                response.call_on_close(
                    lambda f=fn, a=args, k=kwargs, n=attempts: _run(app, f, a, k, n))
        return response
