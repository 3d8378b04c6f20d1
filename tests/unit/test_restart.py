"""The bookkeeping of `arena restart` (arena/infra/restart.py) on real processes and files:
which process may be signalled, which workers count as ready, what a master cleans up. The
hand-over itself runs against real servers in tests/web/test_serving.py."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from arena.infra import restart

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@pytest.fixture
def bystander():
    """A live process that is not an Arena server."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_zombie_is_not_alive_and_a_reaped_process_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while restart._stat(child.pid)[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.02)  # (exited, not yet reaped by us: a zombie)
    assert not restart._alive(child.pid)
    child.wait()
    assert not restart._alive(child.pid) and restart._stat(child.pid) is None
    assert restart._alive(os.getpid()) and restart._parent_of(os.getpid()) == os.getppid()


def test_only_a_process_running_arena_serve_with_a_ready_file_is_replaced(tmp_path, bystander):
    pid_file = tmp_path / "arena.pid"
    with pytest.raises(restart.ServerNotRunning, match="does not hold a process id"):
        restart.replace(pid_file)
    pid_file.write_text(f"{_dead_pid()}\n")
    with pytest.raises(restart.ServerNotRunning, match="is gone"):
        restart.replace(pid_file)
    pid_file.write_text(f"{bystander.pid}\n")
    restart.mark_ready(pid_file, bystander.pid, bystander.pid + 1, 1)  # (a stale one)
    with pytest.raises(restart.ServerNotRunning, match="nothing was signalled"):
        restart.replace(pid_file)
    time.sleep(0.3)
    assert bystander.poll() is None and not restart._serves_arena(bystander.pid)
    with pytest.raises(restart.ServerNotRunning, match="no folder"):
        restart.replace(tmp_path / "missing" / "arena.pid")


def test_two_restarts_of_one_server_do_not_run_at_once(tmp_path):
    pid_file = tmp_path / "arena.pid"
    with restart._exclusive(pid_file):
        refused = pytest.raises(restart.ReplacementFailed, match="under way")
        with refused, restart._exclusive(pid_file):
            pass
    with restart._exclusive(pid_file):  # (free again)
        pass


def test_workers_count_as_ready_while_they_run(tmp_path, bystander):
    pid_file = tmp_path / "arena.pid"
    ready = restart.ready_file(pid_file, 4242)
    assert restart._ready_workers(ready) == (0, 0)
    restart.mark_ready(pid_file, 4242, bystander.pid, 2)
    restart.mark_ready(pid_file, 4242, _dead_pid(), 2)  # (a worker that died since)
    assert restart._ready_workers(ready) == (1, 2)
    restart.clear_ready(pid_file, 4242)
    assert not ready.exists()


def test_a_starting_master_removes_the_ready_files_of_masters_that_are_gone(tmp_path,
                                                                           bystander):
    pid_file = tmp_path / "arena.pid"
    dead = _dead_pid()
    restart.mark_ready(pid_file, dead, dead + 1, 1)
    restart.mark_ready(pid_file, bystander.pid, bystander.pid + 1, 1)
    restart.starting(pid_file)
    assert not restart.ready_file(pid_file, dead).exists()
    assert restart.ready_file(pid_file, bystander.pid).exists()


def test_the_new_master_names_itself_and_drops_a_ready_file_of_its_pid(tmp_path):
    pid_file = tmp_path / "arena.pid"
    restart.mark_ready(pid_file, os.getpid(), 1, 1)  # (left by a master of the past)
    restart.mark_starting(pid_file)
    assert restart._pid_in(restart.next_file(pid_file)) == os.getpid()
    assert not restart.ready_file(pid_file, os.getpid()).exists()


def test_a_new_server_that_never_starts_is_given_up_and_the_old_one_serves_on(
        tmp_path, monkeypatch):
    """A process that takes SIGUSR2 and starts nothing (here a Python process ignoring it,
    with a ready file and a command line that pass for a server): the command gives up
    after FORK_SECONDS, signals nothing else, and says the running one serves on."""
    monkeypatch.setattr(restart, "FORK_SECONDS", 1.0)
    fake = subprocess.Popen([sys.executable, "-c",
                             "import signal, time; signal.signal(signal.SIGUSR2, "
                             "signal.SIG_IGN); time.sleep(60)", "arena", "serve"])
    try:
        time.sleep(0.3)
        pid_file = tmp_path / "arena.pid"
        pid_file.write_text(f"{fake.pid}\n")
        restart.mark_ready(pid_file, fake.pid, fake.pid + 1, 1)
        lines = []
        with pytest.raises(restart.ReplacementFailed,
                           match=f"did not start a new one.*no new server runs.*pid {fake.pid}"
                                 r"\) serves on"):
            restart.replace(pid_file, progress=lines.append)
        assert lines and fake.poll() is None
    finally:
        fake.kill()
        fake.wait()


def test_a_new_server_is_stopped_when_given_up(tmp_path, monkeypatch):
    """_abandon stops the new server named in the .next file, TERM then KILL."""
    pid_file = tmp_path / "arena.pid"
    stubborn = subprocess.Popen([sys.executable, "-c",
                                 "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); time.sleep(60)"])
    try:
        time.sleep(0.3)
        restart.next_file(pid_file).write_text(f"{stubborn.pid}\n")
        reaper = threading.Thread(target=stubborn.wait)
        reaper.start()
        monkeypatch.setattr(restart, "STOP_SECONDS", 0.5)
        said = restart._abandon(pid_file, None, time.monotonic())
        reaper.join(timeout=10)
        assert said == f"; the new one (pid {stubborn.pid}) is stopped"
        assert stubborn.returncode == -9 and not restart.next_file(pid_file).exists()
    finally:
        stubborn.kill()
