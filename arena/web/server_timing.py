"""``Server-Timing`` on every response when ``SERVER_TIMING`` is on (off by default): the
app's own time for the request and how many SQL statements it ran, e.g.
``app;dur=3.1, sql;desc="statements";dur=5``. benchmarks/ingest.py reads it under load, so
the figures it prints are the server's, not the network's or the load generator's."""

from __future__ import annotations

import time

from flask import Flask, g
from sqlalchemy import event


def install(app: Flask) -> None:
    if not app.config.get("SERVER_TIMING"):
        return
    from arena.extensions import db

    @app.before_request
    def start():
        g.server_timing = [time.perf_counter(), 0]

    @app.after_request
    def stamp(response):
        started = g.get("server_timing")
        if started is not None:
            took = (time.perf_counter() - started[0]) * 1000
            response.headers["Server-Timing"] = (f'app;dur={took:.2f}, '
                                                 f'sql;desc="statements";dur={started[1]}')
        return response

    def count(*_args, **_kwargs):
        from flask import has_request_context

        if has_request_context() and g.get("server_timing") is not None:
            g.server_timing[1] += 1

    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", count)
