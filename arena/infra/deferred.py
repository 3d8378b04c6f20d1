"""Work that must not delay, or show in the timing of, the response that asked for it.

In a request, :func:`after_response` runs the work once the response has been sent (WSGI
``close``), in a fresh application context; outside one (the command line, simulations,
tests calling services) it runs at once. Making a gold pair takes tens of milliseconds: done
inside the request that serves it, that time told a script which session held the gold.
"""

from __future__ import annotations

import logging

from flask import after_this_request, current_app, has_request_context

from arena.extensions import db

log = logging.getLogger(__name__)


def after_response(fn, /, *args, **kwargs) -> None:
    if not has_request_context():
        fn(*args, **kwargs)
        return
    app = current_app._get_current_object()

    def run():
        with app.app_context():
            try:
                fn(*args, **kwargs)
            except Exception:  # the response is gone: log, never raise into the server
                log.exception("deferred %s failed", getattr(fn, "__name__", fn))
                db.session.rollback()
            finally:
                db.session.remove()

    @after_this_request
    def schedule(response):
        response.call_on_close(run)
        return response
