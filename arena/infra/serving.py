"""How Arena is served: the settings ``gunicorn.conf.py`` gives gunicorn (``arena serve``
reads the same file), and an error log that keeps client addresses out.

Settings come from the instance as everything else does (defaults <- instance/config.py <-
``ARENA_*`` environment) without building the app: ``BIND``, ``WORKERS``, ``THREADS``.
"""

from __future__ import annotations

import logging
import os
import re

from flask import Config
from gunicorn.glogging import Logger

# gunicorn's default starts with the client's address (and ends with its user agent): the
# log would store what the README promises is stored nowhere. Time, request, status, size,
# duration in ms only.
ACCESS_LOG_FORMAT = '%(t)s "%(r)s" %(s)s %(b)s %(M)sms'

# each worker holds up to one database connection per thread: 8 x 4 threads stay well
# inside PostgreSQL's default max_connections (100) on a many-core machine
MAX_DEFAULT_WORKERS = 8


def instance_config() -> Config:
    """The instance's settings as the app reads them (defaults, then instance/config.py,
    then ``ARENA_*``), without building the app."""
    from arena.config import Defaults
    from arena.infra.instance import instance_folder

    config = Config(instance_folder())
    config.from_object(Defaults)
    config.from_pyfile("config.py", silent=True)
    config.from_prefixed_env("ARENA")
    return config


def default_workers(shared_limits: bool, cpus: int | None = None) -> int:
    """One process per CPU core (a process runs Python on one core at a time), at most
    ``MAX_DEFAULT_WORKERS``; one when the rate limits are counted in each process's memory,
    which several processes would pass N times over."""
    if not shared_limits:
        return 1
    cpus = cpus if cpus is not None else usable_cpus()
    return max(1, min(cpus, MAX_DEFAULT_WORKERS))


def default_threads(database_url: str) -> int:
    """Threads per process that fit the database. On SQLite a request waits on nothing
    outside its process but the writer lock, so threads beyond two only queue for the GIL;
    on PostgreSQL a request waits for the server at every statement, and other threads run
    meanwhile (benchmarks/ingest.py)."""
    return 2 if database_url.startswith("sqlite") else 4


def usable_cpus() -> int:
    """The cores this process may run on (a container's or taskset's share, not the
    machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def shared_limits(config: Config) -> bool:
    """Whether the rate-limit counters are shared between processes (not ``memory://``)."""
    if not config.get("RATELIMIT_ENABLED", True):
        return True
    return not (config.get("RATELIMIT_STORAGE_URI") or "").startswith("memory://")


def settings(config: Config | None = None) -> dict:
    """``bind``, ``workers`` and ``threads`` for the instance: its ``BIND``, ``WORKERS``
    and ``THREADS`` when set, else one worker per core and the database's thread count."""
    config = config if config is not None else instance_config()
    url = config.get("DATABASE_URL") or "sqlite://"
    return {
        "bind": str(config["BIND"]),
        "workers": int(config.get("WORKERS") or default_workers(shared_limits(config))),
        "threads": int(config.get("THREADS") or default_threads(url)),
    }


_IPV4 = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}(?![\w:])"
                   r"|(?<![\w:])(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*)?::"
                   r"(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4})*)?(?![\w:])", re.IGNORECASE)


def redact_addresses(text: str) -> str:
    """``text`` with every IPv4 and IPv6 address replaced by ``[address]``."""
    return _IPV6.sub("[address]", _IPV4.sub("[address]", text))


class AddressFilter(logging.Filter):
    """Rewrites a record's message without client addresses (gunicorn's error log writes
    ``Invalid request from ip=...`` and the peer of a failed connection)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_addresses(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


ADDRESS_FILTER = AddressFilter()


class RedactingLogger(Logger):
    """gunicorn's logger (``logger_class``) whose error log names no client address."""

    def setup(self, cfg) -> None:
        super().setup(cfg)
        logging.getLogger("gunicorn.error").addFilter(ADDRESS_FILTER)
