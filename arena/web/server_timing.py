"""``Server-Timing`` on every response when ``SERVER_TIMING`` is on (off by default): the
app's own time for the request, how many SQL statements it ran and, on SQLite, how long it
waited to write and then held the writer lock (:data:`arena.infra.database.writer_wait`),
e.g. ``app;dur=3.1, sql;desc="statements";dur=5, writer;dur=0.42, held;dur=0.31``.
benchmarks/ingest.py reads it under load, so the figures it prints are the server's, not the
network's or the load generator's. The benchmarks' ceiling and protocol floor
(benchmarks/ceiling.py) install it too, so their server times are measured the same way."""

from __future__ import annotations

import time
from contextvars import ContextVar

from flask import Flask, g
from sqlalchemy import event

# the request's [start, statements], in a context variable rather than ``g``: the count runs
# on every statement, and reading ``g`` through Flask's proxies cost 1-2% of a vote
_timing: ContextVar[list | None] = ContextVar("arena_server_timing", default=None)


def install(app: Flask) -> None:
    """Stamp ``app``'s responses (when its ``SERVER_TIMING`` is on), its statements counted
    on the engine of its Flask-SQLAlchemy extension."""
    if not app.config.get("SERVER_TIMING"):
        return
    from arena.infra.database import writer_wait

    db = app.extensions["sqlalchemy"]

    with app.app_context():
        sqlite = db.engine.dialect.name == "sqlite"

    @app.before_request
    def start():
        g.server_timing = _timing.set([time.perf_counter(), 0])
        if sqlite:  # (PostgreSQL has no writer lock to wait for)
            g.writer_wait = writer_wait.set([0.0, 0.0])

    @app.after_request
    def stamp(response):
        started, waited = _timing.get(), writer_wait.get()
        if started is not None:
            took = (time.perf_counter() - started[0]) * 1000
            response.headers["Server-Timing"] = (
                f'app;dur={took:.2f}, sql;desc="statements";dur={started[1]}'
                + (f", writer;dur={waited[0]:.2f}, held;dur={waited[1]:.2f}"
                   if waited is not None else ""))
        return response

    @app.teardown_request
    def end(_exc=None):
        for name, var in (("server_timing", _timing), ("writer_wait", writer_wait)):
            token = g.pop(name, None)
            if token is not None:
                var.reset(token)

    def count(*_args, **_kwargs):
        timing = _timing.get()
        if timing is not None:
            timing[1] += 1

    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", count)
