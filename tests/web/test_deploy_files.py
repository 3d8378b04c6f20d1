"""deploy/'s files for several app servers, checked without Docker or systemd running:
compose.yaml's services and their order, the systemd units (systemd's own checker where it
is installed), and nginx's own syntax check of its configuration listing two servers."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.security.test_slow_clients import _binary, _rendered_nginx
from tests.timing import seconds
from tests.web.servers import ROOT

DEPLOY = ROOT / "deploy"
APPS = ("app1", "app2")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_runs_two_app_servers_of_one_image_after_the_migration(compose):
    services = compose["services"]
    assert set(services) == {"nginx", *APPS, "migrate", "worker", "postgres", "redis",
                             "minio", "buckets"}
    app, other = (services[name] for name in APPS)
    assert app["build"] == other["build"] == services["migrate"]["build"]
    assert app["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / app["build"]["context"] / app["build"]["dockerfile"]).is_file()
    assert "command" not in app  # (the image's: gunicorn -c gunicorn.conf.py)
    assert services["migrate"]["command"] == ["arena", "db", "upgrade"]
    for name in APPS:
        needs = services[name]["depends_on"]
        assert needs["migrate"] == {"condition": "service_completed_successfully"}
        assert needs["redis"] == {"condition": "service_healthy"}
        assert needs["buckets"] == {"condition": "service_completed_successfully"}
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["nginx"]["depends_on"] == {name: {"condition": "service_healthy"}
                                               for name in APPS}
    # nothing but the proxy is published
    assert [name for name, s in services.items() if "ports" in s] == ["nginx"]


def test_compose_gives_every_server_and_the_migration_the_same_settings(compose):
    services = compose["services"]
    environments = [services[name]["environment"] for name in (*APPS, "migrate", "worker")]
    assert all(env == environments[0] for env in environments)
    assert services["worker"]["command"] == ["arena", "worker"]
    env = environments[0]
    for key in ("ARENA_SECRET_KEY", "ARENA_PSEUDONYM_KEY"):
        # one variable of the host's, required: never a key written into the file
        assert re.fullmatch(rf"\$\{{{key}:\?[^}}]+\}}", env[key]), env[key]
    assert env["ARENA_DATABASE_URL"].startswith("postgresql://arena:")
    assert env["ARENA_DATABASE_URL"].endswith("@postgres:5432/arena")
    assert env["ARENA_RATELIMIT_STORAGE_URI"] == "redis://redis:6379"
    assert env["ARENA_STORAGE_URL"].startswith("s3://arena-images/")
    assert env["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert env["ARENA_TRUSTED_PROXIES"] == "1"
    assert "arena-images" in " ".join(services["buckets"]["command"])


def test_compose_checks_the_health_of_what_others_wait_for(compose):
    services = compose["services"]
    waited = {(name, need["condition"]) for s in services.values()
              for name, need in s.get("depends_on", {}).items()}
    for name, condition in waited:
        if condition == "service_healthy":
            assert services[name]["healthcheck"]["test"][0] == "CMD", name
        else:
            assert services[name]["restart"] == "no", name
    health = services["app1"]["healthcheck"]["test"]
    assert "/api/v1/health" in health[-1]


def test_compose_nginx_uses_deploys_configuration_with_both_servers(compose):
    mounts = dict(volume.split(":")[:2] for volume in compose["services"]["nginx"]["volumes"])
    assert mounts == {"./nginx/nginx.conf": "/etc/nginx/arena/nginx.conf",
                      "./nginx/arena.conf": "/etc/nginx/arena/arena.conf",
                      "./nginx/compose-upstreams.conf": "/etc/nginx/arena/arena-upstreams.conf"}
    for source in mounts:
        assert (DEPLOY / source).is_file(), source
    listed = re.findall(r"^server (\S+);", (DEPLOY / "nginx" / "compose-upstreams.conf")
                        .read_text(), flags=re.M)
    assert listed == [f"{name}:8000" for name in APPS]
    assert compose["services"]["nginx"]["command"][:3] == [
        "nginx", "-c", "/etc/nginx/arena/nginx.conf"]


def _units(folder: Path) -> dict[str, Path]:
    """deploy/systemd's units with the checkout's virtualenv in place of /srv/arena/.venv
    (systemd's checker wants the programs to exist)."""
    venv = str(Path(sys.executable).parent.parent)
    units = {}
    for unit in sorted((DEPLOY / "systemd").glob("*.*")):
        text = unit.read_text().replace("/srv/arena/.venv", venv)
        (folder / unit.name).write_text(text)
        units[unit.name] = folder / unit.name
    assert set(units) == {"arena@.service", "arena-upgrade.service", "arena-rollup.service",
                          "arena-rollup.timer", "arena-worker.service"}
    return units


def _parsed(path: Path) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # (systemd's keys are case-sensitive)
    parser.read_string(path.read_text())
    return parser


def test_the_systemd_units_run_gunicorn_per_port_and_the_upgrade_once():
    server = _parsed(DEPLOY / "systemd" / "arena@.service")
    service = server["Service"]
    assert service["ExecStart"].endswith(
        "/bin/gunicorn -c gunicorn.conf.py --bind 127.0.0.1:%i")
    assert service["EnvironmentFile"] == "/etc/arena/arena.env"
    assert service["Restart"] == "on-failure"
    assert service["ExecReload"] == "/bin/kill -s HUP $MAINPID"
    assert service["KillSignal"] == "SIGTERM" and service["KillMode"] == "mixed"
    assert int(service["TimeoutStopSec"]) > 30  # (gunicorn's graceful_timeout)
    assert (service["Type"], service["NotifyAccess"]) == ("notify", "main")
    assert "arena-upgrade.service" in server["Unit"]["After"].split()
    upgrade = _parsed(DEPLOY / "systemd" / "arena-upgrade.service")["Service"]
    assert upgrade["Type"] == "oneshot"
    assert upgrade["ExecStart"].endswith("/bin/arena db upgrade")
    assert upgrade["EnvironmentFile"] == "/etc/arena/arena.env"
    rollup = _parsed(DEPLOY / "systemd" / "arena-rollup.service")["Service"]
    assert rollup["Type"] == "oneshot" and rollup["ExecStart"].endswith("/bin/arena votes rollup")
    timer = _parsed(DEPLOY / "systemd" / "arena-rollup.timer")
    assert timer["Timer"]["OnUnitActiveSec"] == "5min"
    assert timer["Install"]["WantedBy"] == "timers.target"
    worker = _parsed(DEPLOY / "systemd" / "arena-worker.service")["Service"]
    assert worker["ExecStart"].endswith("/bin/arena worker") and worker["Type"] == "simple"
    assert worker["KillSignal"] == "SIGINT"  # (huey's graceful stop: the job under way ends)


def test_systemd_finds_nothing_wrong_in_the_units(tmp_path):
    checker = shutil.which("systemd-analyze")
    if checker is None:
        pytest.skip("systemd-analyze is not installed")
    units = _units(tmp_path)
    for unit in (tmp_path / "arena@8000.service", units["arena-upgrade.service"],
                 units["arena-rollup.service"], units["arena-rollup.timer"]):
        done = subprocess.run([checker, "verify", str(unit)], capture_output=True, text=True,
                              timeout=seconds(60))
        assert done.returncode == 0 and not done.stdout + done.stderr, (
            unit.name, done.stdout + done.stderr)


def test_nginx_accepts_deploys_configuration_with_two_app_servers(tmp_path):
    """`nginx -t` on deploy/nginx as shipped, rendered with this machine's paths and two
    upstream servers."""
    nginx = _binary("nginx")
    config = _rendered_nginx(tmp_path, 8080, [8001, 8002])
    assert re.findall(r"^server (\S+);", (tmp_path / "arena-upstreams.conf").read_text(),
                      flags=re.M) == ["127.0.0.1:8001", "127.0.0.1:8002"]
    done = subprocess.run([nginx, "-t", "-c", str(config), "-p", str(tmp_path), "-e",
                           str(tmp_path / "error.log")], capture_output=True, text=True,
                          timeout=seconds(60))
    assert done.returncode == 0, done.stderr
