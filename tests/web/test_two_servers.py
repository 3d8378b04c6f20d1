"""Two stock gunicorn app servers behind deploy/'s nginx, sharing one PostgreSQL database,
one Redis and one S3 bucket, as docs/deployment.md ("Several app servers") sets them up:
votes sent through the proxy and straight to each server are all stored, once, and the
online Elo equals a replay of the log; a voter's token, a browser's cookie and CSRF token,
the rate limits, a sign-out and the images work alike on either server; and a server killed
under load loses no acknowledged vote while nginx sends the rest to the other one."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from sqlalchemy import select

from arena.extensions import db
from arena.models import Vote
from benchmarks.deployment import (
    Ledger,
    Load,
    Reply,
    Voter,
    ask,
    bearer,
    children,
    deployed,
    gone,
)
from tests.security.test_slow_clients import _binary, _listening, _start_caddy
from tests.timing import seconds

from .helpers import READ_ACTION, csrf_token, presented_in, task_id
from .servers import free_port, stop

# (one worker takes them all: the two servers behind nginx are started once)
pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.xdist_group("two-servers")]


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


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, s3_server):
    """Two servers behind nginx on one database, Redis and bucket
    (:func:`benchmarks.deployment.deployed`)."""
    _binary("nginx")  # (missing: skipped, or failed under ARENA_REQUIRE_PROXY)
    with deployed(tmp_path_factory.mktemp("two-servers"), s3_server) as live:
        yield live


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
        thread.join(timeout=seconds(120))
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
        thread.join(timeout=seconds(120))
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
        time.sleep(seconds(3))  # (health_interval 1s: a few checks, more on a busy box)
        assert not _vote_through(port, deployment.ledger, voters=2, sessions=3)
        deployment.check_votes()
    finally:
        stop(caddy)
    assert not deployment.logged_tracebacks()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_server_killed_under_load_loses_no_acknowledged_vote(deployment, capsys):
    """One server frozen (SIGSTOP: requests sent to it wait), then killed (SIGKILL to its
    master and worker) while voters keep voting through nginx: only POSTs under way on it
    go unanswered (nginx does not send a POST twice); the GETs that were waiting on it,
    every image GET and every request sent once it is gone are answered by the other
    server. No acknowledged vote is missing, a vote stored without an answer says
    "duplicate" when sent again, and the Elo still equals a replay of the log."""
    deployment.both_running()
    proxy, (survivor, dead) = deployment.proxy, deployment.ports
    victim, victim_log = deployment.servers[1], deployment.logs[1]
    processes = [victim.pid, *children(victim.pid)]
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
        deadline = time.monotonic() + seconds(10)
        while not all(gone(pid) for pid in processes):
            assert time.monotonic() < deadline, "the killed server's processes live on"
            time.sleep(0.01)
        gone_at = time.monotonic()
        for path, probe in probes.items():
            answer = probe.result(timeout=seconds(30))
            assert (answer.status, answer.body) == (200, images[path])
        load.wait_for(60, after=gone_at)  # (the other server takes every voter)
    # nginx had sent some of those GETs to the server that died, and sent them on
    error_log = (deployment.folder / "nginx" / "error.log").read_text()
    assert any(f'upstream: "http://127.0.0.1:{dead}{path}"' in error_log for path in images)
    assert not load.errors, load.errors
    # nginx had sent the killed server its share of the votes
    assert "/vote HTTP/1.1\" 201" in victim_log.read_text()[seen:]
    unanswered = [r for r in load.requests if not r[3]]
    # (nginx learns of the dead server's idle keep-alive connections on its next event-loop
    # turn: a POST it writes into one in between gets no answer, and is sent again)
    noticed = gone_at + seconds(0.5)
    assert all(method == "POST" and began < noticed for began, method, *_ in unanswered), (
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

    # benchmarks/servers.py on this deployment, briefly (its figures in the docs come from
    # its full run; here, not in a test of its own: each test worker would build the
    # deployment again): every figure printed, no acknowledged vote lost, Elo = replay
    from benchmarks import servers

    capsys.readouterr()
    servers.compare(deployment, seconds=2, rounds=1, threads=3)
    out = capsys.readouterr().out
    for shape in ("1 server", "2 servers"):
        assert re.search(rf"^  {shape} +[\d.]+ +[\d.]+ / +[\d.]+ +[\d.]+ / +[\d.]+", out,
                         flags=re.M), out
    assert re.search(r"acknowledged but lost 0$", out, flags=re.M), out
    assert "online Elo = replay of the log: yes" in out
    assert re.search(r"first vote acknowledged after the kill \d+ ms later", out), out
