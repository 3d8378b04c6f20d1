"""What the benchmarks that start Arena share: the environment of a fresh instance, a
scratch folder for it, and a free port.

Imported as ``harness`` by the scripts in this folder (``python benchmarks/x.py`` puts the
folder first on ``sys.path``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

# Rate limits stay on, as in production (the limiter's own work is part of every request),
# at values no benchmark reaches: all of its voters come from one address.
UNREACHED_LIMITS = {f"ARENA_{name}": "10000000/hour" for name in (
    "RATE_LIMIT_SESSIONS", "RATE_LIMIT_VOTES", "RATE_LIMIT_NETWORK_SESSIONS",
    "RATE_LIMIT_NETWORK_VOTES", "RATE_LIMIT_NEW_VOTERS")}


def scratch_dir(prefix: str) -> Path:
    """A new folder under the system's temporary one, removed when the benchmark exits
    (a run used to leave its instance behind: a database and images per run). Set
    ``ARENA_BENCH_KEEP=1`` to keep it for a look afterwards; its path is printed then."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.environ.get("ARENA_BENCH_KEEP"):
        atexit.register(print, f"kept {path}")
    else:
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def instance_env(instance: Path, url: str | None, settings=(), **extra: str) -> dict:
    """The environment of an Arena instance in ``instance`` on database ``url`` (else
    SQLite), for load: no pacing floor, no caption reveal to wait out, no trust floor,
    Server-Timing on, rate limits that no benchmark reaches; then ``extra`` and
    ``settings`` ((KEY, VALUE) pairs, each set as ARENA_KEY).

    The trust floor is off because a benchmark voter answers every pair alike and so fails
    a gold pair within a few sessions: from then on each of its votes was flagged
    distrusted, moved no Elo and locked no rating, and a benchmark would measure that
    cheaper path. A voter who passes their gold pairs takes the rated path, the one
    measured now."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env.update({"ARENA_INSTANCE_PATH": str(instance), "ARENA_SECRET_KEY": "bench",
                "ARENA_PSEUDONYM_KEY": "bench", "ARENA_MIN_VOTE_MS": "{}", "ARENA_TRUST_FLOOR": "0",
                "ARENA_SERVER_TIMING": "true", "ARENA_REVEAL_WORD_MS": "0",
                **UNREACHED_LIMITS, **extra})
    if url:
        env["ARENA_DATABASE_URL"] = url
    env.update({f"ARENA_{key}": value for key, value in settings})
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def median_s(fn, repeats=3) -> float:
    """The median wall time of ``repeats`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
