"""Real servers for tests: started as the README says, on a free port, in their own instance."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.timing import seconds

ROOT = Path(__file__).resolve().parents[2]
ARENA = shutil.which("arena", path=str(Path(sys.executable).parent)) or "arena"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(instance: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["ARENA_INSTANCE_PATH"] = str(instance)
    return env


def wait_healthy(port: int, process: subprocess.Popen, timeout: float = seconds(60)) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.stdout.read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health",
                                        timeout=seconds(2)) as response:
                return {"status": response.status, "body": response.read().decode()}
        except OSError:
            time.sleep(0.2)
    raise AssertionError("server did not become healthy")


def stop(process: subprocess.Popen) -> str:
    process.terminate()
    try:
        out, _ = process.communicate(timeout=seconds(30))
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
    return out


def upgrade(instance: Path) -> Path:
    """``arena db upgrade`` on ``instance`` (the release step before a server starts)."""
    subprocess.run([ARENA, "db", "upgrade"], env=server_env(instance), cwd=ROOT, check=True,
                   capture_output=True, timeout=seconds(120))
    return instance


def serve(instance: Path, port: int, *options: str) -> subprocess.Popen:
    """The README's command, `.venv/bin/arena serve`, on ``instance`` (its output in a pipe
    that :func:`stop` reads)."""
    return subprocess.Popen([ARENA, "serve", "--port", str(port), *options],
                            env=server_env(instance), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
