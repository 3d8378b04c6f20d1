"""Work an operator starts from a page and does not wait for (a campaign's gold supply,
releasing held voters): a thread of this process in the app's context, one per key at a
time; a failure is logged, and the operator can start it again."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from flask import current_app

from arena.extensions import db

log = logging.getLogger(__name__)
_running: set[str] = set()
_lock = threading.Lock()


def start(key: str, work: Callable[[], object]) -> threading.Thread | None:
    """Run ``work()`` in a new thread; None (and nothing started) while ``key``'s runs."""
    app = current_app._get_current_object()
    with _lock:
        if key in _running:
            return None
        _running.add(key)

    def run():
        try:
            with app.app_context():
                try:
                    work()
                except Exception:  # (a thread of its own: nobody else would see it)
                    log.exception("background work %s failed", key)
                finally:
                    db.session.remove()
        finally:
            with _lock:
                _running.discard(key)

    thread = threading.Thread(target=run, name=f"arena-{key}", daemon=True)
    thread.start()
    return thread


def running(key: str) -> bool:
    with _lock:
        return key in _running
