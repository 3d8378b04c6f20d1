"""Setting up and serving: ``arena demo``, ``arena serve``."""

from __future__ import annotations

import os
from pathlib import Path

import click
from flask import current_app
from flask.cli import ScriptInfo, pass_script_info, with_appcontext

from arena.infra.instance import upgrade_database


def _upgrade() -> None:
    for key in upgrade_database():
        click.echo(f"Wrote a new {key} to {current_app.instance_path}/config.py")


@click.command("demo")
@click.option("--prompts", "n_prompts", type=click.IntRange(1, 200), default=None,
              help="Prompts with images (default: DEMO_PROMPTS, 24).")
@click.option("--images", "n_images", type=click.IntRange(1, 8), default=None,
              help="Images per model and prompt (default 4).")
@click.option("--votes", "n_votes", type=click.IntRange(0, 1_000_000), default=400,
              show_default=True, help="Simulated crowd votes cast through the real services, "
              "so the leaderboard has data (0: none).")
@with_appcontext
def demo_command(n_prompts, n_images, n_votes):
    """Create the database and load the demo campaign (does nothing if already loaded)."""
    import numpy as np

    from arena.campaigns import demo

    _upgrade()
    if demo.demo_loaded():
        click.echo("Demo campaign already loaded.")
        return
    total = demo.images_to_draw(n_prompts, n_images)
    with click.progressbar(length=total, label="Drawing demo images") as bar:
        counts = demo.load_demo(n_prompts, n_images, progress=lambda _step, n: bar.update(n))
    click.echo(", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items()))
    from arena.campaigns import campaigns
    from arena.cli.campaigns import fill_gold

    fill_gold(campaigns.get_campaign(demo.DEMO_CAMPAIGN))
    if n_votes:
        with click.progressbar(length=n_votes, label="Simulating crowd votes") as bar:
            cast = demo.simulate_votes(n_votes, np.random.default_rng(2026), progress=bar.update)
        click.echo(f"{cast} simulated votes cast")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--workers", default=None, type=click.IntRange(1, 64),
              help="Processes (default: one per CPU core, at most 8; one when rate limits are kept "
              "in memory). They share the rate limits through the instance's "
              "ratelimits.sqlite3 (or Redis); not with RATELIMIT_STORAGE_URI=memory://.")
@click.option("--threads", default=None, type=click.IntRange(1, 64),
              help="Threads per process (default: 2 on SQLite, 4 on PostgreSQL; they share "
              "one process's rate-limit counters).")
@click.option("--pid", "pid_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the server's process id (default: INSTANCE/arena.pid; "
              "removed when it stops).")
@pass_script_info
def serve_command(info: ScriptInfo, host, port, workers, threads, pid_file):
    """Serve the app with gunicorn (upgrading the database schema first). Stop it with
    Ctrl+C or `kill $(cat instance/arena.pid)`: requests under way are finished first."""
    # The port first, then the app (registered on the group itself: arena/cli/__init__.py):
    # building the app took the 0.6 s of the 0.9 s a start took to listen, and every request
    # meanwhile was refused (a restart after a crash refused 48 under load). Bound first, the
    # requests wait in the port's queue until the workers take them.
    fd = _listen_early(host, port)
    try:
        with info.load_app().app_context():
            _serve(host, port, workers, threads, pid_file, fd)
    finally:
        if fd is not None and fd not in _TAKEN:
            os.close(fd)


def _listen_early(host: str, port: int) -> int | None:
    """A listening socket on ``host``:``port``, made as gunicorn makes its own (an IPv6
    socket for an IPv6 address, IPv4 for anything else; SO_REUSEADDR; no IPV6_V6ONLY, so
    "::" takes IPv4 too where the system does; its backlog), its descriptor for gunicorn to
    take. None when gunicorn is handed its sockets: `arena restart`'s new server inherits
    the running one's (GUNICORN_PID, as gunicorn itself checks), or systemd's socket
    activation names this process."""
    import errno
    import socket

    if "GUNICORN_PID" in os.environ or os.environ.get("LISTEN_PID") == str(os.getpid()):
        return None
    address = _address(host)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, port))
        listener.listen(LISTEN_BACKLOG)
    except OSError as error:
        listener.close()
        hint = (" (is another server running on it? --port chooses another)"
                if error.errno == errno.EADDRINUSE else "")
        raise click.ClickException(
            f"cannot listen on {_bind(host, port)}: {error.strerror or error}{hint}") from None
    return listener.detach()  # (gunicorn takes the descriptor over and closes it when done)


def _address(host: str) -> str:
    """``--host`` as gunicorn reads it: brackets around an IPv6 address dropped, "" for
    every IPv4 address."""
    return host.strip("[]") or "0.0.0.0"


def _bind(host: str, port: int) -> str:
    """gunicorn's bind setting for ``host`` and ``port`` (an IPv6 address in brackets)."""
    address = _address(host)
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


LISTEN_BACKLOG = 2048  # gunicorn's default
_TAKEN: set[int] = set()  # descriptors gunicorn took over


def _serve(host, port, workers, threads, pid_file, fd: int | None):
    from flask import current_app
    from gunicorn.app.base import BaseApplication

    from arena import wsgi_app
    from arena.infra import restart
    from arena.web.limits import shared_storage

    limited = current_app.config.get("RATELIMIT_ENABLED", True)
    shared = not limited or shared_storage(current_app.config["RATELIMIT_STORAGE_URI"])
    if workers is None:
        workers = default_workers(shared)
    elif workers > 1 and not shared:
        raise click.UsageError(
            f"--workers {workers} with rate limits stored in memory would let every limit "
            f"be passed {workers} times over (each process counts on its own): leave "
            "RATELIMIT_STORAGE_URI unset (a file in the instance folder that the processes "
            "share) or set it to redis://..., or serve one process with more --threads")
    if threads is None:
        threads = default_threads(current_app.config["SQLALCHEMY_DATABASE_URI"])
    _upgrade()
    pid_file = pid_file or Path(current_app.instance_path) / "arena.pid"

    class Server(BaseApplication):
        def load_config(self):
            # the socket bound above, else (handed sockets) the address gunicorn's are on
            self.cfg.set("bind", f"fd://{fd}" if fd is not None else _bind(host, port))
            self.cfg.set("workers", workers)
            self.cfg.set("threads", threads)
            self.cfg.set("worker_class", WORKER_CLASS)
            self.cfg.set("pidfile", str(pid_file))
            self.cfg.set("control_socket_disable", True)  # one per user: servers would share it
            self.cfg.set("accesslog", "-")
            self.cfg.set("access_log_format", ACCESS_LOG_FORMAT)
            self.cfg.set("forwarded_allow_ips", os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"))
            # `arena restart`'s hand-over (arena/infra/restart.py)
            self.cfg.set("pre_exec", lambda _server: restart.mark_starting(pid_file))
            self.cfg.set("post_worker_init", lambda worker: restart.mark_ready(
                pid_file, worker.ppid, worker.pid, worker.cfg.workers))
            self.cfg.set("on_starting", lambda _server: restart.starting(pid_file))
            self.cfg.set("on_exit", lambda server: restart.clear_ready(pid_file, server.pid))

        def load(self):
            return wsgi_app()

        def run(self):  # (BaseApplication.run, with the hand-over's arbiter)
            if fd is not None:
                _TAKEN.add(fd)  # (gunicorn closes it: sock.BaseSocket)
            try:
                restart.HandOverArbiter(self).run()
            except RuntimeError as error:
                raise SystemExit(f"\nError: {error}\n") from None

    click.echo(f"Arena is running at http://{_bind(host, port)} with {workers} worker(s) x "
               f"{threads} threads  (Ctrl+C to stop)")
    Server().run()


def default_workers(shared_limits: bool, cpus: int | None = None) -> int:
    """One process per CPU core: a process runs Python on one core at a time, and one
    worker left the second core of the 2-core dev machine idle (SQLite: 203 votes/s with
    one worker, 386 with two; benchmarks/ingest.py), at most ``MAX_DEFAULT_WORKERS``. One
    when the rate limits are counted in each process's memory, which several processes
    would pass N times over."""
    if not shared_limits:
        return 1
    cpus = cpus if cpus is not None else usable_cpus()
    return max(1, min(cpus, MAX_DEFAULT_WORKERS))


def default_threads(database_url: str) -> int:
    """Threads per process that fit the database. On SQLite a request waits on nothing
    outside its process but the writer lock, so threads beyond two only queue for the GIL:
    with 2 workers, 2 threads each took as many votes as 4 (326 and 345 against 331 and 330
    votes/s in two runs of benchmarks/ingest.py) with a third of the p99 (a vote's 12 ms
    against 30-36). On PostgreSQL a request waits for the server at every statement, and
    other threads run meanwhile: 135, 155 and 190 votes/s with 1, 2 and 4 threads."""
    return 2 if database_url.startswith("sqlite") else 4


def usable_cpus() -> int:
    """The cores this process may run on (a container's or taskset's share, not the
    machine's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# each worker holds up to one database connection per thread: 8 x 4 threads stay well
# inside PostgreSQL's default max_connections (100) on a many-core machine
MAX_DEFAULT_WORKERS = 8


# gunicorn's default starts with the client's address (and ends with its user agent): the
# log would store what the README promises is stored nowhere. Time, request, status, size,
# duration in ms only.
ACCESS_LOG_FORMAT = '%(t)s "%(r)s" %(s)s %(b)s %(M)sms'
# gunicorn's threaded worker, reading each request in full before a thread serves it, so
# slow and idle clients cannot hold the threads (arena/infra/worker.py)
WORKER_CLASS = "arena.infra.worker.BufferingWorker"

@click.command("backup")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@with_appcontext
def backup_command(target):
    """Back up the database, images and secrets to one file (.tar or .tar.gz)."""
    from arena.infra import backup

    with click.progressbar(length=backup.image_count(), label="Images") as bar:
        done = backup.backup(target, progress=bar.update)
    click.echo(f"Backed up {_counted(done)} at revision {done.revision} to {done.path} "
               f"({done.bytes / 2**20:.1f} MB, private: it holds the instance's secrets)")


@click.command("restore")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@with_appcontext
def restore_command(source):
    """Restore a backup into a new instance (its database must be empty)."""
    from arena.infra import backup

    with click.progressbar(length=backup.images_in(source), label="Images") as bar:
        done = backup.restore(source, progress=bar.update)
    click.echo(f"Restored {_counted(done)} from {done.path}; schema at {done.revision}. "
               "Start the server again: it reads the restored secrets when it starts.")


def _counted(summary) -> str:
    return (f"{summary.counts['vote']:,} votes, {summary.counts['comparison']:,} comparisons, "
            f"{summary.images:,} image files")


COMMANDS = (demo_command, serve_command, backup_command, restore_command)
