"""``arena restart``: a new release replaces the running server (arena/infra/restart.py).

Registered on the ``arena`` group itself, not through the app, so that it runs without
building the app: a release whose settings break the app's creation is the kind of release
it must refuse to roll out, and it must still be able to say so.
"""

from __future__ import annotations

import signal
from pathlib import Path

import click


@click.command("restart")
@click.option("--pid", "pid_file", type=click.Path(dir_okay=False, path_type=Path),
              help="The running server's pid file (default: INSTANCE/arena.pid, as "
              "`arena serve` writes it).")
@click.option("--timeout", type=click.FloatRange(1, 3600), default=120, show_default=True,
              help="Seconds the new server may take to have its workers ready.")
def restart_command(pid_file, timeout):
    """Replace the running server with the code and settings now installed, refusing no
    request. The new server starts beside it on the same port (upgrading the schema); the
    old one stops once every new worker is ready, finishing its requests under way. If the
    new one cannot start, the old one serves on and this says why. The new server reads
    the code and instance/config.py afresh; its command line and environment are the
    running server's."""
    from arena import instance_folder
    from arena.infra import restart

    pid_file = pid_file or Path(instance_folder()) / "arena.pid"
    # a dropped terminal must not leave two servers: the command carries on; Ctrl+C or a
    # TERM ends it with what serves said (before the old server is told to stop, the new
    # one is stopped)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    done = restart.replace(pid_file, timeout, progress=click.echo)
    click.echo(f"The server now runs as pid {done.new_pid} ({done.workers} worker(s)); the "
               f"old one (pid {done.old_pid}) has stopped. {done.seconds:.1f} s in all.")


COMMANDS = (restart_command,)
