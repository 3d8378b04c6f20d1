"""Slow and idle clients against each way of serving Arena, as a table.

    .venv/bin/python benchmarks/slow_clients.py [--count 256] [--seconds 10]

For each setup (``arena serve``'s embedded server alone; stock gunicorn behind deploy/'s
nginx, and behind deploy/'s Caddyfile, when installed; stock gunicorn alone, for contrast)
and each attack of tests/security/slow_clients.py (``--count`` half-sent request heads,
trickled bodies, silent connections, and all three at once): the share of health checks
(every 0.25 s for ``--seconds``) answered within 200 ms, and the slowest.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.security.slow_clients import attacked_health  # noqa: E402
from tests.security.test_slow_clients import (  # noqa: E402
    _listening,
    _start_caddy,
    _start_nginx,
    _warm,
)
from tests.web.servers import ARENA, free_port, server_env, stop, upgrade  # noqa: E402

ATTACKS = {"half-sent heads": ("heads",), "trickled bodies": ("bodies",),
           "idle sockets": ("idle",), "all three": ("heads", "bodies", "idle")}


def gunicorn(instance: Path, port: int) -> subprocess.Popen:
    env = server_env(instance) | {"ARENA_TRUSTED_PROXIES": "1"}
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", str(ROOT / "gunicorn.conf.py"),
         "--bind", f"127.0.0.1:{port}", "--pid", str(instance / "gunicorn.pid")],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


def measure(port: int, count: int, seconds: float) -> dict[str, str]:
    cells = {}
    for name, kinds in ATTACKS.items():
        watch, attack = attacked_health(port, count, seconds, "/api/v1/health", kinds)
        worst = watch.worst()
        cells[name] = (f"{100 * watch.answered(0.2):.0f}% ("
                       + ("timeouts" if worst == float("inf") else f"{1000 * worst:.0f} ms")
                       + (f", {attack.refused} refused" if attack.refused else "") + ")")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        instance = upgrade(folder / "instance")
        port = free_port()
        server = subprocess.Popen([ARENA, "serve", "--port", str(port)],
                                  env=server_env(instance), cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            _warm(port, server)
            rows["embedded (arena serve)"] = measure(port, args.count, args.seconds)
        finally:
            stop(server)
        upstream = free_port()
        backend = gunicorn(instance, upstream)
        try:
            _warm(upstream, backend)
            for label, binary, start in (("nginx + gunicorn", "nginx", _start_nginx),
                                         ("Caddy + gunicorn", "caddy", _start_caddy)):
                if not shutil.which(binary) and not Path(f"/usr/sbin/{binary}").exists():
                    continue
                proxy_folder = folder / binary
                proxy_folder.mkdir()
                port = free_port()
                proxy = start(proxy_folder, port, upstream)
                try:
                    _listening(port, proxy)
                    _warm(port, proxy)
                    rows[label] = measure(port, args.count, args.seconds)
                finally:
                    stop(proxy)
            rows["gunicorn alone"] = measure(upstream, args.count, args.seconds)
        finally:
            stop(backend)
    print(f"\nhealth checks answered within 200 ms (slowest) under {args.count} of each "
          f"attack, {args.seconds:.0f} s each")
    print(f"| setup | {' | '.join(ATTACKS)} |\n|---|{'---|' * len(ATTACKS)}")
    for label, cells in rows.items():
        print(f"| {label} | {' | '.join(cells[name] for name in ATTACKS)} |")


if __name__ == "__main__":
    main()
