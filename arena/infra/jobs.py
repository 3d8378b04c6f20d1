"""Background work on a job queue (huey): jobs kept in a store every server shares, so they
survive a restart, run once however many servers ask, and are retried with backoff.

Each job is a row of :data:`JOBS`: a name, the function it runs (``module:function``,
imported when it runs), whether it is **unique** (at most one queued or running at a time
across every server, per the values of the named arguments: a lock in the queue's store,
taken when it is queued and let go when it ends) and how often it is **retried** when a
database or image-store outage stops it (after ``RETRY_WAIT_S``, twice as long each time).

The store is ``JOBS_URL``: unset, a SQLite file beside the instance's database (the embedded
default: ``arena serve`` runs the worker in its own process); ``redis://…`` or
``postgresql://…`` when several servers share the work, with ``arena worker`` (or the one
gunicorn starts) taking the jobs. ``TICK_EVERY_MIN`` minutes the worker runs the period's
tick (:mod:`arena.campaigns.period`).
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from flask import Flask, current_app

from arena.errors import Invalid, Unavailable
from arena.extensions import db

log = logging.getLogger(__name__)
RETRY_ATTEMPTS = 9  # waits of 1, 2, 4 ... 256 s: about eight and a half minutes in all
RETRY_WAIT_S = 1.0
RETRY_BACKOFF = 2.0


@dataclass(frozen=True)
class Job:
    name: str
    target: str  # "module:function", called with the job's keyword arguments
    unique: tuple[str, ...] | None = None  # the arguments one lock is per; None: no lock
    retries: int = 0  # tries again after an outage (any other failure is logged, once)
    # with ``unique`` arguments: "module:function" giving the arguments its locks can be on,
    # so that a starting worker can clear those a worker killed mid-job left behind
    lock_args: str | None = None


JOBS = {job.name: job for job in (
    # a published campaign's whole gold supply, one copy at a time
    Job("gold-fill", "arena.campaigns.gold:fill_published", unique=("campaign_id",),
        lock_args="arena.campaigns.gold:fill_lock_args"),
    # an operator's release of a held voter: replays the vote log, one at a time
    Job("release", "arena.analysis.suspects:release_one", unique=()),
    # a gold pair a voter is due, when the try after the response met an outage
    Job("gold-replenish", "arena.campaigns.gold:replenish", retries=RETRY_ATTEMPTS),
    # files of an upload whose row did not commit, when the store was down
    Job("delete-unnamed", "arena.catalog.images:delete_unnamed", retries=RETRY_ATTEMPTS),
    # the period's tick, on the worker's schedule (TICK_EVERY_MIN)
    Job("period-tick", "arena.campaigns.period:tick", unique=()),
)}


def target(job: Job, path: str | None = None):
    module, _, name = (path or job.target).partition(":")
    return getattr(importlib.import_module(module), name)


def outage(exc: BaseException) -> bool:
    """Whether ``exc`` is a database or store being away (worth trying again later)."""
    from arena.infra.database import database_outage

    return isinstance(exc, Unavailable) or database_outage(exc) is not None


def _lock_name(job: Job, kwargs: dict) -> str:
    return "-".join([job.name, *(str(kwargs.get(arg)) for arg in job.unique or ())])


def _huey(app: Flask):
    # (huey imports redis and psycopg: 0.17 s that a command queueing nothing does without)
    from huey import PostgresHuey, RedisHuey, SqliteHuey

    url = app.config.get("JOBS_URL") or ""
    name = app.config.get("JOBS_NAME") or "arena"  # (no results kept: nothing waits on one)
    if url.startswith("redis"):
        return RedisHuey(name, url=url, results=False)
    if url.startswith("postgres"):
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        return PostgresHuey(name, dsn=dsn, results=False)
    path = url.removeprefix("sqlite:///") or os.path.join(app.instance_path, "jobs.sqlite3")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return SqliteHuey(name, filename=path, results=False)


class Queue:
    """The app's queue: its huey, and one huey task per row of :data:`JOBS`."""

    def __init__(self, app: Flask):
        self.app = app
        self.tasks: dict = {}

    @cached_property
    def huey(self):
        """Made on first use (a command that queues nothing opens no store)."""
        huey = _huey(self.app)
        self.tasks.update({job.name: huey.task(
            retries=job.retries, retry_delay=RETRY_WAIT_S, retry_backoff=RETRY_BACKOFF,
            name=job.name)(self._runner(job)) for job in JOBS.values()})
        every = int(self.app.config.get("TICK_EVERY_MIN") or 0)
        if every:
            from huey import crontab

            huey.periodic_task(crontab(minute=f"*/{every}"), name="period-tick-timer")(
                lambda: submit("period-tick", queue=self))
        return huey

    def _runner(self, job: Job):
        def run(**kwargs):
            try:
                with self.app.app_context():
                    try:
                        return target(job)(**kwargs)
                    except Exception as exc:
                        db.session.rollback()
                        if job.retries and outage(exc):
                            log.warning("job %s stopped by an outage (%s): tried again later",
                                        job.name, exc)
                            raise
                        log.exception("job %s failed", job.name)
                    finally:
                        db.session.remove()
            finally:
                if job.unique is not None:
                    self.huey.lock_task(_lock_name(job, kwargs)).release()
        run.__name__ = job.name.replace("-", "_")
        return run

    def worker(self, threads: int = 1):
        """A huey consumer of this queue, not started. On the instance's own queue (JOBS_URL
        unset: one worker reads it) it first clears the locks a worker killed mid-job left
        behind; on a shared one, ``arena jobs --unlock NAME`` does."""
        stale = ",".join(self._locks()) if not self.app.config.get("JOBS_URL") else None
        return self.huey.create_consumer(workers=threads, worker_type="thread",
                                         extra_locks=stale or None, max_delay=2.0)

    def _locks(self) -> list[str]:
        """Every lock the unique jobs can hold now."""
        names = []
        with self.app.app_context():
            for job in JOBS.values():
                if job.unique == ():
                    names.append(job.name)
                elif job.unique is not None and job.lock_args:
                    names += [_lock_name(job, kwargs)
                              for kwargs in target(job, job.lock_args)()]
            db.session.remove()
        return names

    def start_embedded(self, threads: int = 1):
        """Start a worker in this process beside its server (huey's embedding), keeping the
        process's own signal handlers (huey's would stop only the worker). Call from the
        main thread; ``stop(graceful=True)`` it on the way out."""
        kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT,
                                                        signal.SIGHUP)}
        consumer = self.worker(threads)
        consumer.start()
        for sig, handler in kept.items():
            signal.signal(sig, handler)
        return consumer


def init_app(app: Flask) -> None:
    app.extensions["arena_jobs"] = Queue(app)


def queue() -> Queue:
    return current_app.extensions["arena_jobs"]


def submit(name: str, *, queue: Queue | None = None, delay: float | None = None,
           **kwargs) -> bool:
    """Queue job ``name`` with ``kwargs`` (picklable); False, and nothing queued, when the job
    is unique and one with these arguments is queued or running already."""
    from huey.exceptions import TaskLockedException

    job = JOBS[name]
    queue = queue or current_app.extensions["arena_jobs"]
    lock = None
    huey = queue.huey
    if job.unique is not None:
        lock = huey.lock_task(_lock_name(job, kwargs))
        try:
            lock.acquire()
        except TaskLockedException:
            return False
    try:
        if delay:
            queue.tasks[name].schedule(kwargs=kwargs, delay=delay)
        else:
            queue.tasks[name](**kwargs)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return True


def busy(name: str, **kwargs) -> bool:
    """Whether a unique job with these arguments is queued or running."""
    q = queue()
    return q.huey.is_locked(_lock_name(JOBS[name], kwargs))


def pending() -> dict[str, int]:
    """Jobs waiting, by name (scheduled retries included): for operators."""
    q = queue()
    return dict(Counter(task.name for task in [*q.huey.pending(), *q.huey.scheduled()]))


def unlock(lock: str) -> bool:
    """Let go of the lock named ``lock`` (a unique job's name, then its arguments' values:
    ``release``, ``gold-fill-3``) that a worker killed mid-job left behind; True if it was
    held. Raises Invalid for a name no unique job's lock can have."""
    if not any(lock == job.name if job.unique == () else lock.startswith(f"{job.name}-")
               for job in JOBS.values() if job.unique is not None):
        raise Invalid(f"{lock!r} is not a unique job's lock", field="unlock")
    return bool(queue().huey.lock_task(lock).release())


def locked() -> list[str]:
    """The unique jobs without arguments (one a site) queued or under way."""
    return [job.name for job in JOBS.values() if job.unique == () and busy(job.name)]
