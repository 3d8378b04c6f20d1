"""A running server replaced by one on the code and ``instance/config.py`` now installed,
on the same port, without a request refused: ``arena restart``.

Stopping the server and starting it again leaves the port closed while the new one imports
the app and checks the schema: 1.2-3.5 s in which every voter's request is refused
(benchmarks/faults.py). Instead gunicorn's own hand-over is used: SIGUSR2 makes the running
master start a new one (its ``arena serve`` command line, executed afresh with the
environment it was started with, so it loads the new code and settings and upgrades the
schema) that inherits the listening socket; both serve at once while the new workers
start, and only when every new worker has loaded the app is the old master stopped
gracefully (its requests under way are finished). A new version that does not start (a
bad setting, a module that fails to import) is caught before the old server is touched:
it keeps serving, and the command says so.

Bookkeeping beside the pid file: the process about to become the new master writes its pid
to ``<pid file>.next`` (:func:`mark_starting`); each worker, once it has loaded the app,
appends its pid to ``<pid file>.ready-<its master's pid>`` (:func:`mark_ready`), which the
master removes as it exits. That file is also how a process named by the pid file is known
to be an Arena server before it is signalled. ``<pid file>.lock`` keeps two restarts apart.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gunicorn.arbiter import Arbiter

from arena.errors import NotFound, Unavailable

POLL_SECONDS = 0.1
# the running master forks the new one at its next wake-up (it sleeps up to a second)
FORK_SECONDS = 10.0
# gunicorn's graceful timeout (30 s) for the old server's requests under way, and a margin
STOP_SECONDS = 40.0
# the new master takes over the pid file at its next wake-up after its parent's exit
PROMOTE_SECONDS = 10.0

log = logging.getLogger(__name__)


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


class HandOverArbiter(Arbiter):
    """gunicorn's master, except in taking the pid file over from its parent: a new master
    whose parent died during the hand-over (kill -9) found the parent's pid still in the
    file and, the parent not yet reaped by its own parent, took it for a running server and
    stopped, leaving nothing to serve (the audit of `arena restart`, four times in four)."""

    def maybe_promote_master(self):
        if self.master_pid and self.master_pid != os.getppid() and self.cfg.pidfile:
            _release_pid_file(Path(self.cfg.pidfile), self.master_pid)
        super().maybe_promote_master()


def ready_file(pid_file: Path, master_pid: int) -> Path:
    return pid_file.with_name(f"{pid_file.name}.ready-{master_pid}")


def next_file(pid_file: Path) -> Path:
    return pid_file.with_name(f"{pid_file.name}.next")


def mark_starting(pid_file: Path) -> None:
    """Called in the process that is about to become the new master (gunicorn's
    ``pre_exec``, after the fork, before the exec: its pid is the new master's). A ready
    file left under this pid by a dead master of the past is removed first. If the pid
    cannot be written (a full disk), the fork ends here: gunicorn's own handling of a
    failed fork would stop the running server's workers and remove its pid file."""
    try:
        ready_file(pid_file, os.getpid()).unlink(missing_ok=True)
        next_file(pid_file).write_text(f"{os.getpid()}\n")
    except OSError as error:
        log.error("arena restart: cannot write %s (%s); no new server", next_file(pid_file),
                  error)
        os._exit(1)


def mark_ready(pid_file: Path, master_pid: int, worker_pid: int, workers: int) -> None:
    """Called in each worker once it has loaded the app (gunicorn's ``post_worker_init``):
    one line per worker, appended (a write this short is atomic). A failure is logged, not
    raised: gunicorn would take it for a worker that cannot boot and stop the server."""
    try:
        with ready_file(pid_file, master_pid).open("a") as out:
            out.write(f"{worker_pid} {workers}\n")
    except OSError as error:
        log.warning("arena restart: cannot mark worker %s ready (%s)", worker_pid, error)


def starting(pid_file: Path) -> None:
    """Called in a master as it starts (gunicorn's ``on_starting``): the ready files of
    masters that are gone (killed, or before a reboot) are removed, so that none can vouch
    for a process that later took the same pid."""
    for path in pid_file.parent.glob(f"{pid_file.name}.ready-*"):
        pid = path.name.rsplit("-", 1)[1]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                path.unlink()


def clear_ready(pid_file: Path, master_pid: int) -> None:
    """Called in the master as it exits (gunicorn's ``on_exit``)."""
    with contextlib.suppress(OSError):
        ready_file(pid_file, master_pid).unlink(missing_ok=True)


def replace(pid_file: Path, timeout: float = 120.0,
            progress: Callable[[str], None] = lambda _message: None) -> Replaced:
    """Replace the server whose master's pid is in ``pid_file`` (see the module's text).
    An interruption (KeyboardInterrupt) ends it with a ReplacementFailed that says what
    serves: before the old server is told to stop, the new one is stopped and the old one
    serves on; after, the hand-over completes by itself.

    Raises
    ------
    ServerNotRunning
        If ``pid_file`` names no running Arena server.
    ReplacementFailed
        If another restart is under way, if the new server stopped before its workers were
        ready or was not ready in ``timeout`` seconds (it is stopped then: the old server
        serves on), if the hand-over did not complete (the message says what serves), or
        if it was interrupted.
    """
    if not pid_file.parent.is_dir():
        raise ServerNotRunning(f"no server is running: there is no folder {pid_file.parent}")
    with _exclusive(pid_file):
        try:
            old = _running_master(pid_file)
        except KeyboardInterrupt:
            raise ReplacementFailed("interrupted before a new server was started") from None
        started = time.monotonic()
        _say(progress, f"Starting a new server beside the running one (pid {old})")
        new, workers = _new_server_ready(pid_file, old, timeout)
        try:
            os.kill(old, signal.SIGTERM)
        except ProcessLookupError:
            pass
        finally:
            next_file(pid_file).unlink(missing_ok=True)
        try:
            _say(progress, f"The new server (pid {new}) has {workers} worker(s) ready; the "
                           "old one stops once its requests under way are finished")
            return _handed_over(pid_file, old, new, workers, started)
        except KeyboardInterrupt:
            raise ReplacementFailed(f"interrupted as the old server (pid {old}) was stopping: "
                                    f"the new one (pid {new}) takes over by itself") from None


def _handed_over(pid_file: Path, old: int, new: int, workers: int,
                 started: float) -> Replaced:
    """Once the old master has been told to stop: it has, and the new one has taken over
    the pid file (HandOverArbiter)."""
    if not _wait(lambda: not _alive(old), STOP_SECONDS):
        raise ReplacementFailed(f"the old server (pid {old}) has not stopped after "
                                f"{STOP_SECONDS:.0f} s (its log says why); the new one (pid "
                                f"{new}) serves")
    _wait(lambda: _pid_in(pid_file) == new or not _alive(new), PROMOTE_SECONDS)
    if not _alive(new):
        raise ReplacementFailed(
            f"the old server (pid {old}) has stopped, and so has the new one (pid {new}): "
            "nothing serves; the server's log says why; start it with `arena serve`")
    if _pid_in(pid_file) != new:
        raise ReplacementFailed(f"the new server (pid {new}) serves but has not taken "
                                f"over {pid_file}; see the server's log")
    clear_ready(pid_file, old)  # (in case the old master could not)
    return Replaced(old, new, workers, time.monotonic() - started)


def _say(progress: Callable[[str], None], message: str) -> None:
    """Progress that cannot stop a hand-over half-way (a dropped terminal raises EIO, a
    closed pipe EPIPE)."""
    with contextlib.suppress(OSError):
        progress(message)


@contextlib.contextmanager
def _exclusive(pid_file: Path) -> Iterator[None]:
    with open(pid_file.with_name(f"{pid_file.name}.lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ReplacementFailed("another `arena restart` of this server is under way"
                                    ) from None
        yield


def _running_master(pid_file: Path) -> int:
    """The pid of the Arena server named by ``pid_file``, once a hand-over an interrupted
    restart left behind has been undone."""
    pid = _pid_in(pid_file)
    if pid is None:
        raise ServerNotRunning(f"no server is running: {pid_file} does not hold a process id "
                               "(start one with `arena serve`)")
    if not _alive(pid):
        raise ServerNotRunning(f"no server is running: process {pid} of {pid_file} is gone "
                               "(start one with `arena serve`)")
    if not (ready_file(pid_file, pid).exists() and _serves_arena(pid)):
        raise ServerNotRunning(
            f"process {pid} of {pid_file} is not an Arena server this command can replace "
            f"(not `arena serve`, or no {ready_file(pid_file, pid).name} beside it: another "
            "program that took a stale pid, or a server started before `arena restart` "
            "existed); nothing was signalled. Stop and start the server with `arena serve`")
    left = _pid_in(next_file(pid_file))
    if left is not None and left != pid and _alive(left) and _parent_of(left) == pid:
        # a new server an interrupted restart left serving beside the old one: stopped, and
        # the hand-over begins afresh once the old master has reaped it (it takes no
        # second SIGUSR2 before)
        if not _stop(left):
            raise ReplacementFailed(f"a new server an earlier restart left (pid {left}) "
                                    "does not stop; stop it by hand")
        _wait(lambda: not Path(f"/proc/{left}").exists(), 5.0)
    next_file(pid_file).unlink(missing_ok=True)
    return pid


def _new_server_ready(pid_file: Path, old: int, timeout: float) -> tuple[int, int]:
    """Signal the old master to start the new one; the new master's pid once all its
    workers are ready, and their number. On a failure or an interruption the new server
    is stopped (signals held meanwhile, so a second Ctrl+C cannot leave it running)."""
    deadline = time.monotonic() + timeout
    forked_by = time.monotonic() + FORK_SECONDS
    new = None
    try:
        os.kill(old, signal.SIGUSR2)
        while True:
            if new is None:
                new = _pid_in(next_file(pid_file))
                if new is None and time.monotonic() > forked_by:
                    raise ReplacementFailed(f"the running server (pid {old}) did not start "
                                            "a new one (its log says why)")
            if new is not None:
                if not _alive(new):
                    raise ReplacementFailed(
                        f"the new server (pid {new}) stopped before its workers were ready "
                        "(its output, in the running server's log, says why)")
                ready, workers = _ready_workers(ready_file(pid_file, new))
                if workers and ready >= workers:
                    return new, workers
            if time.monotonic() > deadline:
                raise ReplacementFailed(f"the new server was not ready in {timeout:g} s")
            time.sleep(POLL_SECONDS)
    except ReplacementFailed as failed:
        with _signals_held():
            stopped = _abandon(pid_file, new, forked_by)
        raise ReplacementFailed(failed.message + stopped + _serves_on(pid_file, old)
                                ) from None
    except KeyboardInterrupt:
        with _signals_held():
            stopped = _abandon(pid_file, new, forked_by)
        raise ReplacementFailed(f"interrupted{stopped}{_serves_on(pid_file, old)}") from None


def _abandon(pid_file: Path, new: int | None, forked_by: float) -> str:
    """Stop the new server, waiting for its fork if it has not shown yet (the old master
    forks at its next wake-up); what became of it, for the message."""
    if new is None:
        _wait(lambda: _pid_in(next_file(pid_file)) is not None,
              max(forked_by - time.monotonic(), 0.0))
        new = _pid_in(next_file(pid_file))
    try:
        if new is None:
            return "; no new server runs"
        if _stop(new):
            return f"; the new one (pid {new}) is stopped"
        return f"; the new one (pid {new}) did not stop: stop it by hand"
    finally:
        next_file(pid_file).unlink(missing_ok=True)


def _stop(pid: int) -> bool:
    """Stop process ``pid``: TERM, again at every poll (one sent between the fork and the
    exec is lost), KILL after STOP_SECONDS. Whether it has stopped."""
    def gone() -> bool:
        with contextlib.suppress(ProcessLookupError):
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)
                return False
        return True

    if _wait(gone, STOP_SECONDS):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return _wait(lambda: not _alive(pid), 5.0)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _serves_on(pid_file: Path, old: int) -> str:
    """The end of a failure's message: what serves now."""
    if _alive(old):
        return f"; the running one (pid {old}) serves on"
    _release_pid_file(pid_file, old)
    return (f"; the old server (pid {old}) has stopped meanwhile: nothing serves, start it "
            "with `arena serve`")


def _release_pid_file(pid_file: Path, old: int) -> None:
    """Remove ``pid_file`` if it still names the old master, which is gone: one killed
    before it could (kill -9) may not have been reaped yet, and gunicorn, taking such a
    zombie for a live server, would refuse to let the new master take the file over."""
    if _pid_in(pid_file) == old and not _alive(old):
        pid_file.unlink(missing_ok=True)


def _serves_arena(pid: int) -> bool:
    """Whether process ``pid`` runs `arena serve` (or `flask --app arena serve`), by its
    command line (True without /proc: the ready file is the only evidence there)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return b"serve" in argv and any(b"arena" in arg for arg in argv)


def _ready_workers(path: Path) -> tuple[int, int]:
    """How many of the workers that said they were ready still run, and how many the
    master runs."""
    try:
        lines = path.read_text().split("\n")
    except FileNotFoundError:
        return 0, 0
    rows = [line.split() for line in lines if len(line.split()) == 2]
    alive = {int(pid) for pid, _ in rows if _alive(int(pid))}
    return len(alive), max((int(n) for _, n in rows), default=0)


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
    state = _stat(pid)
    return state is None or state[0] != "Z"


def _parent_of(pid: int) -> int | None:
    state = _stat(pid)
    return int(state[1]) if state else None


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state, parent, ...), or None
    without /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _wait(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True
