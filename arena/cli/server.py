"""Setting up and serving: ``arena demo``, ``arena serve``, ``arena worker``, ``arena jobs``."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import shutil
import signal
import socket
import sys
from pathlib import Path

import click
from flask import current_app
from flask.cli import ScriptInfo, pass_script_info, with_appcontext

from arena.config import PACKAGE_DIR
from arena.errors import Invalid
from arena.infra.instance import check_schema, ensure_instance, upgrade_database

# the checkout's file (gunicorn -c gunicorn.conf.py), else the copy the wheel ships
CONFIG_FILE = next((p for p in (PACKAGE_DIR.parent / "gunicorn.conf.py",
                                PACKAGE_DIR / "gunicorn.conf.py") if p.exists()),
                   PACKAGE_DIR / "gunicorn.conf.py")


def _wrote(keys: list[str]) -> None:
    for key in keys:
        click.echo(f"Wrote a new {key} to {current_app.instance_path}/config.py")


@click.command("demo")
@click.option("--prompts", "n_prompts", type=click.IntRange(1, 200), default=None,
              help="Prompts with images (default: DEMO_PROMPTS, 24).")
@click.option("--images", "n_images", type=click.IntRange(1, 8), default=None,
              help="Images per model and prompt (default: DEMO_IMAGES_PER_MODEL, 2).")
@click.option("--votes", "n_votes", type=click.IntRange(0, 1_000_000), default=400,
              show_default=True, help="Simulated crowd votes cast through the real services, "
              "so the leaderboard has data (0: none).")
@with_appcontext
def demo_command(n_prompts, n_images, n_votes):
    """Create the database and load the demo campaign (does nothing if already loaded)."""
    import numpy as np

    from arena.campaigns import demo
    from arena.voting.votes import ensure_all_ratings

    _wrote(upgrade_database())
    ensure_all_ratings()  # (a criterion added to EXTRA_CRITERIA since the last start)
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
@click.option("--server", type=click.Choice(["embedded", "gunicorn"]), default="embedded",
              show_default=True, help="embedded: one process that reads every request whole "
              "before a thread serves it, safe to face clients directly; gunicorn: stock "
              "gunicorn workers, behind a buffering proxy (deploy/).")
@click.option("--host", default=None, help="Address to listen on (default: BIND's, 127.0.0.1).")
@click.option("--port", default=None, type=click.IntRange(0, 65535),
              help="Port to listen on (default: BIND's, 5000).")
@click.option("--workers", default=None, type=click.IntRange(1, 64),
              help="gunicorn processes (default: WORKERS, else one per CPU core, at most 8; "
              "one when rate limits are kept in memory).")
@click.option("--threads", default=None, type=click.IntRange(1, 256),
              help="Threads per process (default: THREADS, else 2 on SQLite, 4 on PostgreSQL; "
              "the embedded server runs workers x threads in its one process).")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), default=CONFIG_FILE, show_default=True,
              help="The gunicorn settings file both servers read.")
@click.option("--pid", "pid_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the server's process id (default: INSTANCE/arena.pid).")
@pass_script_info
def serve_command(info: ScriptInfo, server, host, port, workers, threads, config_file,
                  pid_file):
    """Serve the app (the schema must be current: `arena db upgrade`). Both servers read
    gunicorn.conf.py; the options override it. Stop with Ctrl+C or
    `kill $(cat instance/arena.pid)`."""
    app = info.load_app()
    with app.app_context():
        _wrote(ensure_instance())
        check_schema()
        memory_limits = (app.config.get("RATELIMIT_ENABLED", True) and
                         app.config["RATELIMIT_STORAGE_URI"].startswith("memory://"))
        pid_file = pid_file or Path(current_app.instance_path) / "arena.pid"
    settings = runpy.run_path(str(config_file))
    bind = _bind(settings["bind"], host, port)
    if memory_limits:
        if workers is not None and workers > 1 and server == "gunicorn":
            raise click.UsageError(
                f"--workers {workers} with rate limits stored in memory would let every "
                f"limit be passed {workers} times over (each process counts on its own): "
                "set RATELIMIT_STORAGE_URI to redis://... (unset it counts in each process's "
                "memory), or serve one process with more --threads")
        workers = 1
    workers = workers or settings["workers"]
    threads = threads or settings["threads"]
    if server == "gunicorn":
        click.echo(f"Arena is starting gunicorn on http://{bind} with {workers} worker(s) x "
                   f"{threads} threads ({config_file}); `arena worker` takes its jobs")
        click.echo(phone_hint(bind), nl=False)
        sys.stdout.flush()
        # its console script, not `python -m gunicorn`: a USR2 upgrade re-runs the command,
        # and a module path would put gunicorn's own `http` package before the standard one
        script = (shutil.which("gunicorn", path=str(Path(sys.executable).parent))
                  or shutil.which("gunicorn") or "gunicorn")
        os.execv(script, [script, "-c", str(config_file), "--bind", bind,
                          "--workers", str(workers), "--threads", str(threads),
                          "--pid", str(pid_file)])
    _serve_embedded(settings, bind, workers * threads, pid_file)


def _bind(configured, host: str | None, port: int | None) -> str:
    """The address to serve on: the settings file's first ``bind``, with ``host`` and
    ``port`` put in its place when given."""
    first = configured[0] if isinstance(configured, list | tuple) else str(configured)
    if host is None and port is None:
        return first
    default_host, _, default_port = first.rpartition(":")
    host = default_host if host is None else host
    if ":" in host.strip("[]"):
        host = f"[{host.strip('[]')}]"
    return f"{host or '0.0.0.0'}:{default_port if port is None else port}"


def lan_urls(bind: str) -> list[str]:
    """The URLs a phone on the same network opens when ``bind`` listens on every interface
    (0.0.0.0 or [::]); none otherwise. This machine's address on the route out (a UDP
    socket's connect sends nothing), else its host name's addresses, loopback left out."""
    host, _, port = bind.rpartition(":")
    if host not in ("0.0.0.0", "[::]", ""):
        return []
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # (TEST-NET-1: never reached)
            found.append(probe.getsockname()[0])
        except OSError:
            pass
    with contextlib.suppress(OSError):
        found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None,
                                                             socket.AF_INET)]
    addresses = [a for a in dict.fromkeys(found) if not a.startswith(("127.", "0."))]
    return [f"http://{address}:{port}/" for address in addresses]


def phone_hint(bind: str) -> str:
    """What to open on a phone, and its QR code for the camera, or "" on loopback."""
    urls = lan_urls(bind)
    if not urls:
        return ""
    import segno

    qr = io.StringIO()
    segno.make(urls[0], error="m").terminal(qr, compact=True)
    return ("Open Arena on a phone on this network (or scan the code):\n"
            + "".join(f"  {url}\n" for url in urls) + qr.getvalue())


def _serve_embedded(settings: dict, bind: str, threads: int, pid_file: Path) -> None:
    """waitress, with the settings file's values: it reads each request head and body in
    its one I/O thread (spilling large bodies to disk) and hands a thread only a complete
    request, so slow and idle clients cost a socket, not a thread."""
    import logging
    import resource

    import waitress

    from arena import wsgi_app
    from arena.infra.serving import ADDRESS_FILTER

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(levelname)s] %(message)s"))
    handler.addFilter(ADDRESS_FILTER)
    log = logging.getLogger("waitress")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # (waitress gives the root logger a handler too: each line twice)
    connections = int(settings.get("worker_connections", 1000))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < connections + 256:  # (each connection a descriptor, plus files and the database)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(connections + 256, hard), hard))
    app = wsgi_app()
    pid_file.write_text(f"{os.getpid()}\n")
    worker = None
    if app.config["JOBS_WORKER"] == "embedded":  # (the embedded default: no other service)
        worker = app.extensions["arena_jobs"].start_embedded(int(app.config["JOBS_THREADS"]))
    # (waitress finishes the requests under way on SystemExit, as on Ctrl+C)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    click.echo(f"Arena is running at http://{bind} with {threads} threads  (Ctrl+C to stop)")
    click.echo(phone_hint(bind), nl=False)
    try:
        waitress.serve(
            app, listen=bind, threads=threads, ident="arena",
            connection_limit=connections,
            asyncore_use_poll=True,  # select() stops at 1,024 descriptors
            recv_bytes=65536,  # a burst of bodies read in fewer turns of the I/O thread
            backlog=int(settings.get("backlog", 2048)),
            channel_timeout=int(settings.get("timeout", 30)),
            cleanup_interval=max(1, int(settings.get("keepalive", 5))),
            max_request_body_size=app.config["MAX_CONTENT_LENGTH"] or 1 << 30,
            max_request_header_size=int(settings.get("limit_request_field_size", 8190)) * 4)
    finally:
        if worker is not None:
            worker.stop(graceful=True)  # (the job under way finishes; the queued ones wait)
        pid_file.unlink(missing_ok=True)


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


@click.command("worker")
@click.option("--threads", type=click.IntRange(1, 64),
              help="Jobs run at once (default: JOBS_THREADS).")
@with_appcontext
def worker_command(threads):
    """Take the queue's jobs (gold fills, releases, retries after an outage, the period's
    tick every TICK_EVERY_MIN minutes) until stopped (Ctrl+C or TERM: the job under way
    finishes). One per site beside gunicorn; the embedded server runs its own."""
    from arena.infra import jobs

    check_schema()
    queue = jobs.queue()
    threads = threads or int(current_app.config["JOBS_THREADS"])
    click.echo(f"Arena's job worker is running with {threads} thread(s) on "
               f"{type(queue.huey).__name__}  (Ctrl+C to stop)")
    sys.stdout.flush()
    queue.worker(threads).run()


@click.command("jobs")
@click.option("--unlock", metavar="NAME",
              help="Let go of a unique job's lock that a worker killed mid-job left behind "
              "(release, period-tick, or gold-fill-CAMPAIGN_ID).")
@with_appcontext
def jobs_command(unlock):
    """The queue's jobs waiting (retries included) and the unique ones under way."""
    from arena.infra import jobs

    if unlock:
        try:
            done = jobs.unlock(unlock)
        except Invalid as exc:  # (a name no lock can have: a usage error, exit 2)
            raise click.BadParameter(str(exc), param_hint="--unlock") from None
        click.echo(f"{unlock}: {'let go' if done else 'was not held'}")
        return
    waiting = jobs.pending()
    busy = jobs.locked()
    if not waiting and not busy:
        click.echo("No job is waiting or under way.")
    for name, count in sorted(waiting.items()):
        click.echo(f"waiting  {name}: {count}")
    for name in busy:
        click.echo(f"queued or under way  {name}")


COMMANDS = (demo_command, serve_command, backup_command, restore_command, worker_command,
            jobs_command)
