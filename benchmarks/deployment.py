"""Several app servers as docs/deployment.md sets them up, for the two-server tests and
``benchmarks/servers.py``: two stock gunicorn servers behind deploy/'s nginx, sharing one
PostgreSQL database, one Redis and one S3 bucket; voters on the JSON API who keep a ledger
of what they were told; a load of voters without a pause, each request timed."""

from __future__ import annotations

import http.client
import json
import secrets
import subprocess
import sys
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from sqlalchemy import select

from arena import create_app
from arena.extensions import db
from arena.models import Vote
from arena.voting import live_elo, votes
from benchmarks.harness import instance_env
from tests.conftest import (
    REDIS_URL,
    Bucket,
    _pg_admin,
    _pg_url,
    app_config,
    connected_redis,
    s3_env,
)
from tests.security.test_slow_clients import _binary, _listening, _start_nginx
from tests.web.servers import ARENA, ROOT, free_port, stop

GUNICORN = str(Path(sys.executable).parent / "gunicorn")
# the demo campaign, small: 4 prompts x 4 models x 2 images, gold made ahead, one size
SETTINGS = {
    "ARENA_TRUSTED_PROXIES": "1",  # nginx's X-Forwarded-For names the client
    "ARENA_WORKERS": "1",  # one process per server: the servers share this machine's cores
    "ARENA_SERVER_TIMING": "false",
    "ARENA_DEMO_PROMPTS": "4",
    "ARENA_DEMO_IMAGES_PER_MODEL": "2",
    "ARENA_GOLD_MAX_DAMAGED": "4",
    "ARENA_PRESENT_SIZES": "[384]",
    "ARENA_DEMO_IMAGE_SIZE": "384",
    # the one limit counted (every voter here comes from 127.0.0.1: the others are out of
    # reach, as in benchmarks/harness.py)
    "ARENA_RATE_LIMIT_SIGN_IN": "3/minute",
}
NO_ANSWER = (OSError, http.client.HTTPException)


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self):
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


def ask(port: int, method: str, path: str, *, body: dict | None = None,
        form: dict | None = None, headers: dict | None = None, timeout: float = 30) -> Reply:
    """One request on a new connection; raises OSError or HTTPException without an answer."""
    headers = dict(headers or {})
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    elif form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


def send(port: int, method: str, path: str, **options) -> Reply | None:
    """:func:`ask`, or None when no server answered (nginx says so with 502 or 504)."""
    try:
        reply = ask(port, method, path, **options)
    except NO_ANSWER:
        return None
    return None if reply.status in (502, 504) else reply


@dataclass
class Ledger:
    """What voters were told: votes acknowledged (201, with their voter's token), votes
    sent without an answer, and those of them whose retry said they had been stored (200,
    duplicate)."""

    acknowledged: dict[int, str] = field(default_factory=dict)
    unanswered: set[int] = field(default_factory=set)
    duplicates: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def vote(self, sender, token: str, task: int) -> Reply:
        """The vote, sent again until it is answered, as a phone app does; ``sender`` is
        :func:`send` without its port."""
        while (reply := sender("POST", f"/api/v1/tasks/{task}/vote", headers=bearer(token),
                               body={"choice": "left", "response_ms": 1500})) is None:
            with self.lock:
                self.unanswered.add(task)
            time.sleep(0.05)
        with self.lock:
            if reply.status == 201:
                self.acknowledged[task] = token
            elif reply.status == 200 and reply.json().get("duplicate"):
                assert task in self.unanswered, "a vote answered duplicate on its first send"
                self.duplicates.add(task)
        return reply


def bearer(token: str | None) -> dict:
    return {"Authorization": f"Bearer {token}"} if token else {}


class Voter:
    """A phone voter on the JSON API: a session, each caption confirmed, each task voted."""

    def __init__(self, ledger: Ledger):
        self.ledger, self.token, self.public_id = ledger, None, None

    def session(self, port: int) -> list[dict]:
        reply = ask(port, "POST", "/api/v1/sessions", body={}, headers=bearer(self.token))
        if reply.status == 409 and self.token is not None:  # every pair seen: a new voter
            self.token = None
            return self.session(port)
        assert reply.status == 201, (reply.status, reply.body[:300])
        body = reply.json()
        self.token = self.token or body["voter_token"]
        self.public_id = body["voter_id"]
        return body["tasks"]

    def read(self, port: int, task: dict) -> None:
        if task["prompt"] is not None:
            reply = ask(port, "POST", f"/api/v1/tasks/{task['task_id']}/read",
                        headers=bearer(self.token))
            assert reply.status == 200, (reply.status, reply.body[:300])

    def vote(self, port: int, task: dict) -> Reply:
        return self.ledger.vote(partial(send, port), self.token, task["task_id"])


@dataclass
class Deployment:
    """nginx on ``proxy`` in front of app servers on ``ports``, and the test's own app on
    the shared database (for counting votes and replaying the log)."""

    proxy: int
    ports: list[int]
    envs: list[dict]
    logs: list[Path]
    servers: list[subprocess.Popen]
    folder: Path
    app: object
    operator_token: str
    bucket: Bucket
    ledger: Ledger = field(default_factory=Ledger)

    def start(self, index: int) -> None:
        with self.logs[index].open("a") as log:
            # (a session of its own: killing the group kills the master and its worker)
            self.servers[index] = subprocess.Popen(
                [GUNICORN, "-c", str(ROOT / "gunicorn.conf.py")], env=self.envs[index],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_healthy(self, index: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.servers[index].poll() is None, self.logs[index].read_text()[-3000:]
            try:
                if ask(self.ports[index], "GET", "/api/v1/health", timeout=2).status == 200:
                    return
            except NO_ANSWER:
                pass
            time.sleep(0.2)
        raise AssertionError(f"server {index} did not become healthy")

    def both_running(self) -> None:
        """Start again a server an earlier test killed."""
        for index, server in enumerate(self.servers):
            if server.poll() is not None:
                self.start(index)
                self.wait_healthy(index)

    def stored(self) -> set[int]:
        """The tasks with a stored vote; checks that none has two."""
        with self.app.app_context():
            tasks = db.session.scalars(select(Vote.task_id)).all()
            db.session.remove()
        assert len(tasks) == len(set(tasks))
        return set(tasks)

    def check_votes(self) -> set[int]:
        """Every acknowledged vote stored, nothing else stored but votes sent without an
        answer, and the online Elo equal to a replay of the log. Returns the stored."""
        stored, ledger = self.stored(), self.ledger
        acknowledged = set(ledger.acknowledged)
        assert acknowledged <= stored, sorted(acknowledged - stored)
        assert stored == acknowledged | ledger.duplicates  # (those sent without an answer)
        with self.app.app_context():
            online = ratings()
            votes.replay()
            db.session.expire_all()
            assert ratings() == online  # the same floats: votes numbered in lock order
            db.session.remove()
        return stored

    def logged_tracebacks(self) -> list[str]:
        return [log.name for log in self.logs if "Traceback" in log.read_text()]


def ratings() -> dict:
    return live_elo.every_rating()


def _environment(instance: Path, url: str, shared: dict) -> dict:
    env = instance_env(instance, url, (), **SETTINGS, **shared)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        env.pop(name, None)
    return env


def _arena(env: dict, *args: str) -> str:
    done = subprocess.run([ARENA, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@contextmanager
def deployed(folder: Path, s3_server: str):
    """The release as docs/deployment.md runs it: a new database upgraded once with
    `arena db upgrade`, the demo loaded once, then two gunicorn servers (each its own
    instance folder: nothing shared on disk) and nginx listing both."""
    _binary("nginx")  # (missing: skipped, or failed under ARENA_REQUIRE_PROXY)
    redis_client = connected_redis()
    import boto3

    admin = _pg_admin()
    name = f"arena_two_{secrets.token_hex(4)}"
    url, prefix = _pg_url(name), f"arena-test-{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    client = boto3.client("s3", endpoint_url=s3_server, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    bucket = Bucket(f"arena-{secrets.token_hex(6)}", "arena", client)
    shared = {**s3_env(s3_server), "ARENA_STORAGE_URL": bucket.url,
              "ARENA_RATELIMIT_STORAGE_URI": REDIS_URL, "ARENA_RATELIMIT_KEY_PREFIX": prefix,
              "ARENA_JOBS_URL": REDIS_URL, "ARENA_JOBS_NAME": prefix}
    command_env = _environment(folder / "release", url, shared)
    ports = [free_port(), free_port()]
    envs = [_environment(folder / f"server-{i}", url, shared)
            | {"ARENA_BIND": f"127.0.0.1:{port}"} for i, port in enumerate(ports)]
    app = create_app(app_config(folder / "checker", DATABASE_URL=url))
    live = Deployment(free_port(), ports, envs, [folder / f"server-{i}.log" for i in (0, 1)],
                      [None, None], folder, app, "", bucket)
    nginx = None
    try:
        client.create_bucket(Bucket=bucket.name)
        _arena(command_env, "db", "upgrade")
        _arena(command_env, "demo", "--votes", "0")
        live.operator_token = _arena(command_env, "token", "create", "ops", "--role",
                                     "operator").strip()
        for index in (0, 1):
            live.start(index)
        for index in (0, 1):
            live.wait_healthy(index)
        (folder / "nginx").mkdir()
        nginx = _start_nginx(folder / "nginx", live.proxy, ports)
        _listening(live.proxy, nginx)
        yield live
    finally:
        if nginx is not None:
            stop(nginx)
        for server in live.servers:
            if server is not None:
                stop(server)
        with app.app_context():
            db.session.remove()
            db.engine.dispose()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        keys = list(redis_client.scan_iter(f"*{prefix}*"))
        if keys:
            redis_client.delete(*keys)
        redis_client.close()
        client.close()


@dataclass
class Load:
    """Voters through the proxy without a pause, each request timed: a session, both images
    of each task, its caption confirmed, its vote (each POST sent again until answered)."""

    port: int
    ledger: Ledger
    threads: int = 6
    running: bool = True
    # (began, method, path, status or False without an answer, seconds it took)
    requests: list = field(default_factory=list)
    errors: list = field(default_factory=list)

    def __post_init__(self):
        self.workers = [threading.Thread(target=self._run, daemon=True)
                        for _ in range(self.threads)]

    def _send(self, method: str, path: str, **options) -> Reply | None:
        began = time.monotonic()
        reply = send(self.port, method, path, **options)
        self.requests.append((began, method, path, reply is not None and reply.status,
                              time.monotonic() - began))
        return reply

    def _until_answered(self, method: str, path: str, **options) -> Reply:
        while (reply := self._send(method, path, **options)) is None:
            time.sleep(0.05)
        return reply

    def _run(self):
        token = None
        try:
            while self.running:
                reply = self._until_answered("POST", "/api/v1/sessions", body={},
                                             headers=bearer(token))
                if reply.status == 409:  # every pair seen: a new voter
                    token = None
                    continue
                assert reply.status == 201, (reply.status, reply.body[:300])
                session = reply.json()
                token = token or session["voter_token"]
                for task in session["tasks"]:
                    for side in ("left", "right"):
                        path = urllib.parse.urlsplit(task[side]["url"]).path
                        image = self._send("GET", path)
                        assert image is not None and image.status == 200, path
                    if task["prompt"] is not None:
                        self._until_answered("POST", f"/api/v1/tasks/{task['task_id']}/read",
                                             headers=bearer(token))
                    reply = self.ledger.vote(self._send, token, task["task_id"])
                    assert reply.status in (200, 201), (reply.status, reply.body[:300])
        except Exception as exc:
            self.errors.append(repr(exc))

    def __enter__(self):
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc):
        self.running = False
        for worker in self.workers:
            worker.join(timeout=60)

    def wait_for(self, votes: int, after: float, timeout: float = 60) -> None:
        """Until ``votes`` votes sent after ``after`` (monotonic) have been acknowledged."""
        deadline = time.monotonic() + timeout
        while (done := sum(began > after and method == "POST" and path.endswith("/vote")
                           and status == 201
                           for began, method, path, status, _ in list(self.requests))) < votes:
            assert not self.errors, self.errors
            assert time.monotonic() < deadline, f"{done} of {votes} votes"
            time.sleep(0.05)


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split()[2] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True
