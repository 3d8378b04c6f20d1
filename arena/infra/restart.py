"""A running server replaced by one on the code and settings now installed, on the same
port, without a request refused: ``arena restart``.

Stopping the server and starting it again leaves the port closed while the new one imports
the app and checks the schema: 3.0-3.5 s in which every voter's request is refused
(benchmarks/faults.py). Instead gunicorn's own hand-over is used: SIGUSR2 makes the running
master start a new one (the same ``arena serve`` command line, executed afresh, so it
loads the new code and upgrades the schema) that inherits the listening socket, both serve
at once while the new workers start, and only when every new worker has loaded the app is
the old master stopped gracefully (its requests under way are finished). A new version that
does not start (a bad setting, a module that fails to import) is caught before the old
server is touched: it keeps serving, and the command says so.

The new master writes its pid beside the pid file before it executes (:func:`mark_starting`),
and its workers say they are ready by appending their process ids to a file named after
their master (:func:`mark_ready`), which the master removes when it exits.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from arena.errors import NotFound, Unavailable

POLL_SECONDS = 0.1
# the running master forks the new one at its next wake-up (it sleeps up to a second)
FORK_SECONDS = 10.0
# gunicorn's graceful timeout (30 s) for the old server's requests under way, and a margin
STOP_SECONDS = 40.0


class ServerNotRunning(NotFound):
    pass


class ReplacementFailed(Unavailable):
    pass


@dataclass(frozen=True)
class Replaced:
    old_pid: int
    new_pid: int
    workers: int
    seconds: float  # from the signal to the new server serving alone


def ready_file(pid_file: Path, master_pid: int) -> Path:
    return pid_file.with_name(f"{pid_file.name}.ready-{master_pid}")


def next_file(pid_file: Path) -> Path:
    return pid_file.with_name(f"{pid_file.name}.next")


def mark_starting(pid_file: Path) -> None:
    """Called in the process that is about to become the new master (gunicorn's
    ``pre_exec``, after the fork, before the exec: its pid is the new master's)."""
    next_file(pid_file).write_text(f"{os.getpid()}\n")


def mark_ready(pid_file: Path, master_pid: int, worker_pid: int, workers: int) -> None:
    """Called in each worker once it has loaded the app (gunicorn's ``post_worker_init``):
    one line per worker, appended (a write this short is atomic)."""
    with ready_file(pid_file, master_pid).open("a") as out:
        out.write(f"{worker_pid} {workers}\n")


def clear_ready(pid_file: Path, master_pid: int) -> None:
    """Called in the master as it exits (gunicorn's ``on_exit``)."""
    ready_file(pid_file, master_pid).unlink(missing_ok=True)


def replace(pid_file: Path, timeout: float = 120.0,
            progress: Callable[[str], None] = lambda _message: None) -> Replaced:
    """Replace the server whose master's pid is in ``pid_file`` (see the module's text).

    Raises
    ------
    ServerNotRunning
        If no server's pid is in ``pid_file``, or that process is gone.
    ReplacementFailed
        If a replacement is already under way, if the new server stopped before its
        workers were ready, or if it was not ready in ``timeout`` seconds (it is stopped
        then); the old server serves on in every case.
    """
    started = time.monotonic()
    old = _running_master(pid_file)
    progress(f"Starting a new server beside the running one (pid {old})")
    os.kill(old, signal.SIGUSR2)
    try:
        new, workers = _new_server_ready(pid_file, old, timeout)
    finally:
        next_file(pid_file).unlink(missing_ok=True)
    progress(f"The new server (pid {new}) has {workers} worker(s) ready; stopping the old "
             "one once its requests under way are finished")
    os.kill(old, signal.SIGTERM)
    if not _wait(lambda: not _alive(old), STOP_SECONDS):
        raise ReplacementFailed(f"the old server (pid {old}) has not stopped after "
                                f"{STOP_SECONDS:.0f} s; both serve the port")
    # the new master takes over the pid file within a second of its parent's exit
    _wait(lambda: _pid_in(pid_file) == new, 5.0)
    clear_ready(pid_file, old)  # (in case the old master could not)
    return Replaced(old, new, workers, time.monotonic() - started)


def _running_master(pid_file: Path) -> int:
    pid = _pid_in(pid_file)
    if pid is None:
        raise ServerNotRunning(f"no server is running: {pid_file} does not hold a process id "
                               "(start one with `arena serve`)")
    if not _alive(pid):
        raise ServerNotRunning(f"no server is running: process {pid} of {pid_file} is gone "
                               "(start one with `arena serve`)")
    under_way = _pid_in(next_file(pid_file))
    if under_way is not None and _alive(under_way):
        raise ReplacementFailed(f"a replacement is already under way (pid {under_way})")
    next_file(pid_file).unlink(missing_ok=True)
    return pid


def _new_server_ready(pid_file: Path, old: int, timeout: float) -> tuple[int, int]:
    """The new master's pid once all its workers are ready, and their number."""
    deadline = time.monotonic() + timeout
    forked_by = time.monotonic() + FORK_SECONDS
    new = None
    while True:
        if new is None:
            new = _pid_in(next_file(pid_file))
            if new is None and time.monotonic() > forked_by:
                raise ReplacementFailed(
                    f"the running server (pid {old}) did not start a new one (its log says "
                    "why); it serves on")
        if new is not None:
            if not _alive(new):
                raise ReplacementFailed(
                    f"the new server (pid {new}) stopped before its workers were ready (its "
                    "output, in the running server's log, says why); the running one (pid "
                    f"{old}) serves on")
            ready, workers = _ready_workers(ready_file(pid_file, new))
            if workers and ready >= workers:
                return new, workers
        if time.monotonic() > deadline:
            if new is not None:
                os.kill(new, signal.SIGTERM)
            raise ReplacementFailed(f"the new server was not ready in {timeout:.0f} s; it "
                                    f"is stopped and the running one (pid {old}) serves on")
        time.sleep(POLL_SECONDS)


def _ready_workers(path: Path) -> tuple[int, int]:
    try:
        lines = path.read_text().split("\n")
    except FileNotFoundError:
        return 0, 0
    rows = [line.split() for line in lines if line.strip()]
    return len({pid for pid, _ in rows}), max((int(n) for _, n in rows), default=0)


def _pid_in(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped by its parent, does
    not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # (no /proc: trust the signal)
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True
