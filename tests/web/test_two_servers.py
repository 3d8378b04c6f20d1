"""Two stock gunicorn app servers behind deploy/'s nginx, sharing one PostgreSQL database,
one Redis and one S3 bucket, as docs/deployment.md ("Several app servers") sets them up:
votes sent through the proxy and straight to each server are all stored, once, and the
online Elo equals a replay of the log; a voter's token, a browser's cookie and CSRF token,
the rate limits, a sign-out and the images work alike on either server; and a server killed
under load loses no acknowledged vote while nginx sends the rest to the other one."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from sqlalchemy import select

from arena import create_app
from arena.extensions import db
from arena.models import EloRating, Vote
from arena.voting import votes
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
from tests.security.test_slow_clients import _binary, _listening, _start_caddy, _start_nginx

from .helpers import READ_ACTION, csrf_token, presented_in, task_id
from .servers import ARENA, ROOT, free_port, stop

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

GUNICORN = str(Path(sys.executable).parent / "gunicorn")
# the demo campaign, small: 4 prompts x 4 models x 2 images, gold made ahead, one size
SETTINGS = {
    "ARENA_TRUSTED_PROXIES": "1",  # nginx's X-Forwarded-For names the client
    "ARENA_WORKERS": "1",  # one process per server: two servers share this machine's cores
    "ARENA_SERVER_TIMING": "false",
    "ARENA_DEMO_PROMPTS": "4",
    "ARENA_DEMO_IMAGES_PER_MODEL": "2",
    "ARENA_GOLD_MAX_DAMAGED": "4",
    "ARENA_PRESENT_SIZES": "[384]",
    "ARENA_DEMO_IMAGE_SIZE": "384",
    # the one limit counted here (every voter of this test comes from 127.0.0.1: the others
    # are out of reach, as in benchmarks/harness.py)
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


class Browser:
    """A browser's cookies, sent to whichever server it asks (cookies ignore the port)."""

    def __init__(self):
        self.cookies: dict[str, str] = {}

    def ask(self, port: int, method: str, path: str, **options) -> Reply:
        headers = options.pop("headers", {})
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        reply = ask(port, method, path, headers=headers, **options)
        for line in reply.headers.get_all("Set-Cookie") or ():
            for name, morsel in SimpleCookie(line).items():
                self.cookies[name] = morsel.value
        return reply


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
    return {(r.criterion, r.model_id): (r.rating, r.votes, r.wins)
            for r in db.session.scalars(select(EloRating))}


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


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, s3_server):
    """The release as docs/deployment.md runs it: a new database upgraded once with
    `arena db upgrade`, the demo loaded once, then two gunicorn servers (each its own
    instance folder: nothing shared on disk) and nginx listing both."""
    _binary("nginx")  # (missing: skipped, or failed under ARENA_REQUIRE_PROXY)
    redis_client = connected_redis()
    import boto3

    folder = tmp_path_factory.mktemp("two-servers")
    admin = _pg_admin()
    name = f"arena_two_{secrets.token_hex(4)}"
    url, prefix = _pg_url(name), f"arena-test-{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    client = boto3.client("s3", endpoint_url=s3_server, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    bucket = Bucket(f"arena-{secrets.token_hex(6)}", "arena", client)
    shared = {**s3_env(s3_server), "ARENA_STORAGE_URL": bucket.url,
              "ARENA_RATELIMIT_STORAGE_URI": REDIS_URL, "ARENA_RATELIMIT_KEY_PREFIX": prefix}
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


def test_votes_through_the_proxy_and_straight_to_each_server_are_all_stored(deployment):
    """Voters through nginx and straight to each server at once (so both certainly serve):
    each vote acknowledged is stored once, nothing else is, and the Elo equals a replay."""
    deployment.both_running()
    proxy, (first, second) = deployment.proxy, deployment.ports
    issued: list[int] = []
    errors: list[str] = []

    def run(port: int):
        try:
            voter = Voter(deployment.ledger)
            for _ in range(3):
                for task in voter.session(port):
                    issued.append(task["task_id"])
                    voter.read(port, task)
                    reply = voter.vote(port, task)
                    assert reply.status == 201, (reply.status, reply.body[:300])
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(port,))
               for port in (proxy, proxy, first, first, second, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(issued) == 6 * 3 * 3
    assert set(issued) <= deployment.check_votes()
    assert not deployment.logged_tracebacks()


def test_a_voter_token_works_on_either_server(deployment):
    """A session opened on one server, its votes on the other, the next session there: one
    voter throughout, and a vote sent again to the first server is a duplicate."""
    deployment.both_running()
    first, second = deployment.ports
    voter = Voter(deployment.ledger)
    tasks = voter.session(first)
    public_id = voter.public_id
    for task in tasks:
        voter.read(first, task)
        assert voter.vote(second, task).status == 201
    again = ask(first, "POST", f"/api/v1/tasks/{tasks[0]['task_id']}/vote",
                headers=bearer(voter.token), body={"choice": "right", "response_ms": 1500})
    assert again.status == 200 and again.json() == {"accepted": False, "duplicate": True}
    more = voter.session(second)
    assert voter.public_id == public_id
    for task in more:
        voter.read(second, task)
        assert voter.vote(first, task).status == 201
    with deployment.app.app_context():
        voters = db.session.scalars(select(Vote.voter_id).where(Vote.task_id.in_(
            [t["task_id"] for t in [*tasks, *more]])).distinct()).all()
        db.session.remove()
    assert len(voters) == 1
    deployment.check_votes()


def test_a_browser_session_started_on_one_server_continues_on_the_other(deployment):
    """The start form from one server posted to the other (its CSRF token and cookie are
    good on both), then each request of the session to the next server in turn, as
    nginx's round robin sends them: every vote stored, one voter throughout."""
    deployment.both_running()
    ports = [*deployment.ports, deployment.proxy]
    browser = Browser()
    landing = browser.ask(ports[0], "GET", "/")
    assert landing.status == 200 and "session" in browser.cookies
    started = browser.ask(ports[1], "POST", "/start",
                          form={"csrf_token": csrf_token(landing.text)})
    assert started.status == 303, started.body[:300]
    page = browser.ask(ports[0], "GET", started.headers["Location"])
    assert page.status == 200
    html, voted, turn = page.text, [], 1
    htmx = {"HX-Request": "true"}
    while (task := task_id(html)) is not None:
        port = ports[turn % len(ports)]
        turn += 1
        if (read := READ_ACTION.search(html)) is not None:
            reply = browser.ask(port, "POST", read[1], form={"csrf_token": csrf_token(html)},
                                headers=dict(htmx))
            assert reply.status == 200, reply.body[:300]
            html = reply.text
            port = ports[turn % len(ports)]
            turn += 1
        reply = browser.ask(port, "POST", f"/t/{task}", headers=dict(htmx), form={
            "csrf_token": csrf_token(html), "choice": "left", "response_ms": "1500"})
        assert reply.status == 200, reply.body[:300]
        voted.append(task)
        html = reply.text
    assert len(voted) == 3
    with deployment.app.app_context():
        voters = db.session.scalars(select(Vote.voter_id)
                                    .where(Vote.task_id.in_(voted))).all()
        db.session.remove()
    assert len(voters) == 3 and len(set(voters)) == 1
    with deployment.ledger.lock:
        deployment.ledger.acknowledged.update(dict.fromkeys(voted, ""))
    deployment.check_votes()


def _signed_in(browser: Browser, port: int) -> bool:
    return "Sign out" in browser.ask(port, "GET", "/admin/").text


def test_a_sign_out_and_the_rate_limits_hold_on_every_server(deployment):
    """An operator signed in on one server is signed in on the other; signing out there
    ends a copy of the cookie on the first. The sign-in limit (3 a minute per network,
    counted in Redis) counts requests to both servers and through the proxy together."""
    deployment.both_running()
    first, second = deployment.ports
    browser = Browser()
    form = browser.ask(first, "GET", "/admin/").text
    signed = browser.ask(first, "POST", "/admin/sign-in", form={
        "csrf_token": csrf_token(form), "token": deployment.operator_token})
    assert signed.status == 303 and signed.headers["X-RateLimit-Remaining"] == "2"
    assert _signed_in(browser, second)
    saved = dict(browser.cookies)
    page = browser.ask(second, "GET", "/admin/").text
    assert browser.ask(second, "POST", "/admin/sign-out",
                       form={"csrf_token": csrf_token(page)}).status == 303
    replayed = Browser()
    replayed.cookies = saved
    assert _signed_in(replayed, second) is False
    assert _signed_in(replayed, first) is False

    stranger = Browser()
    answers = []
    for port in (second, first, second, deployment.proxy):
        form = stranger.ask(port, "GET", "/admin/").text
        reply = stranger.ask(port, "POST", "/admin/sign-in", form={
            "csrf_token": csrf_token(form), "token": "not-a-token"})
        answers.append((reply.status, reply.headers.get("X-RateLimit-Remaining")))
    # (with each server counting alone, the second server would have let its second try by)
    assert answers == [(401, "1"), (401, "0"), (429, "0"), (429, "0")]


def test_an_image_is_served_alike_by_either_server_from_the_bucket(deployment):
    """An image URL of a session (a name made for that task) gives the same bytes from
    either server and through the proxy: the presented variant stored in the bucket."""
    deployment.both_running()
    voter = Voter(deployment.ledger)
    tasks = voter.session(deployment.proxy)
    stored = {data for key, data in deployment.bucket.objects().items()
              if key.endswith(".p384.webp")}
    for task in tasks:
        for side in ("left", "right"):
            path = urllib.parse.urlsplit(task[side]["url"]).path
            replies = [ask(port, "GET", path) for port in (*deployment.ports, deployment.proxy)]
            assert [r.status for r in replies] == [200, 200, 200]
            assert {r.headers["Content-Type"] for r in replies} == {"image/webp"}
            assert len({r.body for r in replies}) == 1
            assert presented_in(replies[0].body, stored)


@dataclass
class Load:
    """Voters through the proxy without a pause, each request timed: a session, both images
    of each task, its caption confirmed, its vote (each POST sent again until answered)."""

    port: int
    ledger: Ledger
    threads: int = 6
    running: bool = True
    requests: list = field(default_factory=list)  # (began, method, path, answered)
    errors: list = field(default_factory=list)

    def __post_init__(self):
        self.workers = [threading.Thread(target=self._run, daemon=True)
                        for _ in range(self.threads)]

    def _send(self, method: str, path: str, **options) -> Reply | None:
        began = time.monotonic()
        reply = send(self.port, method, path, **options)
        self.requests.append((began, method, path, reply is not None and reply.status))
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
                           for began, method, path, status in list(self.requests))) < votes:
            assert not self.errors, self.errors
            assert time.monotonic() < deadline, f"{done} of {votes} votes"
            time.sleep(0.05)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split()[2] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def _images(voter: Voter, port: int, count: int) -> dict[str, bytes]:
    """``count`` image paths of ``voter``'s new sessions on ``port``, and their bytes."""
    paths: list[str] = []
    while len(paths) < count:
        paths += [urllib.parse.urlsplit(task[side]["url"]).path
                  for task in voter.session(port) for side in ("left", "right")]
    return {path: ask(port, "GET", path).body for path in paths[:count]}


def _vote_through(port: int, ledger: Ledger, voters: int, sessions: int) -> list[str]:
    """``voters`` voters answering ``sessions`` sessions each through ``port`` at once."""
    errors: list[str] = []

    def run():
        try:
            voter = Voter(ledger)
            for _ in range(sessions):
                for task in voter.session(port):
                    voter.read(port, task)
                    reply = voter.vote(port, task)
                    assert reply.status == 201, (reply.status, reply.body[:300])
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run) for _ in range(voters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


def test_caddy_spreads_the_voters_over_both_servers_and_skips_a_dead_one(deployment):
    """Caddy as docs/deployment.md sets it for several servers (deploy/Caddyfile, both
    upstreams, retries, health checks): votes through it reach both servers and are all
    stored. With one server killed, once Caddy's health check has found it gone, every
    request is answered by the other server. (Without the health check, Caddy 2.6 sent
    every other vote to the dead server first and then on to the other one without its
    body: 502, caddyserver/caddy#5454.)"""
    _binary("caddy")
    deployment.both_running()
    folder = deployment.folder / "caddy"
    folder.mkdir(exist_ok=True)
    port = free_port()
    caddy = _start_caddy(folder, port, deployment.ports)
    try:
        _listening(port, caddy)
        seen = [len(log.read_text()) for log in deployment.logs]
        assert not _vote_through(port, deployment.ledger, voters=4, sessions=3)
        for log, before in zip(deployment.logs, seen, strict=True):
            assert "/vote HTTP/1.1\" 201" in log.read_text()[before:], log.name
        deployment.check_votes()
        victim = deployment.servers[1]
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        time.sleep(3)  # (health_interval 1s)
        assert not _vote_through(port, deployment.ledger, voters=2, sessions=3)
        deployment.check_votes()
    finally:
        stop(caddy)
    assert not deployment.logged_tracebacks()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_server_killed_under_load_loses_no_acknowledged_vote(deployment):
    """One server frozen (SIGSTOP: requests sent to it wait), then killed (SIGKILL to its
    master and worker) while voters keep voting through nginx: only POSTs under way on it
    go unanswered (nginx does not send a POST twice); the GETs that were waiting on it,
    every image GET and every request sent once it is gone are answered by the other
    server. No acknowledged vote is missing, a vote stored without an answer says
    "duplicate" when sent again, and the Elo still equals a replay of the log."""
    deployment.both_running()
    proxy, (survivor, dead) = deployment.proxy, deployment.ports
    victim, victim_log = deployment.servers[1], deployment.logs[1]
    processes = [victim.pid, *_children(victim.pid)]
    seen, earlier = len(victim_log.read_text()), set(deployment.ledger.acknowledged)
    images = _images(Voter(deployment.ledger), survivor, 16)
    with Load(proxy, deployment.ledger) as load, ThreadPoolExecutor(len(images)) as pool:
        load.wait_for(30, after=0)
        with deployment.ledger.lock:
            before_kill = [(task, token) for task, token in deployment.ledger.acknowledged.items()
                           if task not in earlier]
        os.killpg(victim.pid, signal.SIGSTOP)
        probes = {path: pool.submit(ask, proxy, "GET", path) for path in images}
        time.sleep(0.5)  # (those nginx sent to the frozen server wait for it)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in processes):
            assert time.monotonic() < deadline, "the killed server's processes live on"
            time.sleep(0.01)
        gone_at = time.monotonic()
        for path, probe in probes.items():
            answer = probe.result(timeout=30)
            assert (answer.status, answer.body) == (200, images[path])
        load.wait_for(60, after=gone_at)  # (the other server takes every voter)
    # nginx had sent some of those GETs to the server that died, and sent them on
    error_log = (deployment.folder / "nginx" / "error.log").read_text()
    assert any(f'upstream: "http://127.0.0.1:{dead}{path}"' in error_log for path in images)
    assert not load.errors, load.errors
    # nginx had sent the killed server its share of the votes
    assert "/vote HTTP/1.1\" 201" in victim_log.read_text()[seen:]
    unanswered = [r for r in load.requests if not r[3]]
    assert all(method == "POST" and began < gone_at for began, method, _, _ in unanswered), (
        gone_at, unanswered)
    assert len(unanswered) <= load.threads, unanswered  # (one under way per voter at most)

    stored = deployment.check_votes()
    ledger = deployment.ledger
    assert len(stored - set(ledger.acknowledged)) <= len(ledger.unanswered) <= load.threads
    # votes sent again after their answer, half of them stored by the killed server
    for task, token in before_kill:
        reply = ask(deployment.proxy, "POST", f"/api/v1/tasks/{task}/vote",
                    headers=bearer(token), body={"choice": "right", "response_ms": 1500})
        assert reply.status == 200 and reply.json() == {"accepted": False, "duplicate": True}
    assert deployment.stored() == stored
    assert not deployment.logged_tracebacks()
