"""Work that must not delay, or show in the timing of, the response that asked for it.

In a request, :func:`after_response` runs a job of :mod:`arena.infra.jobs` once the response
has been sent (WSGI ``close``), in a fresh application context; outside one (the command
line, simulations, tests calling services) it runs at once. Making a gold pair takes tens of
milliseconds: done inside the request that serves it, that time told a script which session
held the gold.

When a database or image-store outage stops it, the job goes to the queue, retried with
backoff for about eight minutes by whichever worker is up: the need that asked for it may
never be seen again otherwise.
"""

from __future__ import annotations

import logging

from flask import Flask, after_this_request, current_app, has_request_context

from arena.extensions import db
from arena.infra import jobs

log = logging.getLogger(__name__)


def after_response(name: str, /, **kwargs) -> None:
    """Run job ``name`` with ``kwargs`` after the response (at once outside a request); to
    the queue, with its retries, if an outage stops it."""
    if not has_request_context():
        jobs.target(jobs.JOBS[name])(**kwargs)
        return
    app = current_app._get_current_object()

    @after_this_request
    def schedule(response):
        response.call_on_close(lambda: _run(app, name, kwargs))
        return response


def _run(app: Flask, name: str, kwargs: dict) -> None:
    with app.app_context():
        try:
            jobs.target(jobs.JOBS[name])(**kwargs)
        except Exception as exc:  # the response is gone: log, never raise into the server
            db.session.rollback()
            if jobs.JOBS[name].retries and jobs.outage(exc):
                log.warning("deferred %s stopped by an outage (%s): queued to try again",
                            name, exc)
                try:
                    jobs.submit(name, delay=jobs.RETRY_WAIT_S, **kwargs)
                except Exception:
                    log.exception("deferred %s could not be queued", name)
            else:
                log.exception("deferred %s failed", name)
        finally:
            db.session.remove()
