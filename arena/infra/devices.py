"""The performance devices: where Arena departs from plain SQLAlchemy or from Python's
defaults for speed. Each is kept while a benchmark of the current tree shows it earns more
than 25% (its figure and command in its comment); the ones that did not were removed.
``DEVICES`` lists those on; ``ARENA_DEVICES=""`` is plain SQLAlchemy and Python's
defaults, for measuring what each earns (``benchmarks/ingest.py --paired DEVICES=...``,
``benchmarks/request_cost.py --paired DEVICES=...``).
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from functools import lru_cache

from flask import current_app

NAMES = ("writer-queue",)


@lru_cache(maxsize=8)  # (asked on every write transaction: the setting parsed once)
def chosen(value) -> frozenset[str]:
    """The devices a ``DEVICES`` setting names. Raises ValueError on a name not in NAMES."""
    names = frozenset(n.strip() for n in str(value).split(",") if n.strip())
    if names - set(NAMES):
        raise ValueError(f"ARENA_DEVICES names {', '.join(sorted(names - set(NAMES)))}: "
                         f"the devices are {', '.join(NAMES)}")
    return names


# -- writer-queue -----------------------------------------------------------------------------
# The writer threads of one process queue here and wake the moment it is free, instead of
# sleeping in SQLite's busy handler (1-100 ms steps): a vote's p99 under load 22 ms against 79
# without (votes/s 0.96 of it; `ingest.py --only sqlite --paired DEVICES=`, 2026-12-03,
# commit 46f9f29). Other processes still meet at SQLite's lock.
sqlite_writer = threading.RLock()


def writer_queue():
    """What a write transaction on SQLite holds first: this process's queue, or nothing."""
    return sqlite_writer if "writer-queue" in chosen(current_app.config["DEVICES"]) \
        else nullcontext()
