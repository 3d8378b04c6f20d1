"""The protocol floor of benchmarks/ceiling.py is a correct implementation of the voter API's
records, or Arena's share of it would flatter nobody: it refuses what the protocol refuses
(an unknown token, another voter's task, a vote before the caption was read, a second vote)
and stores what it accepts. The flow that drives it in the benchmarks runs here too."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def floor(tmp_path, monkeypatch):
    monkeypatch.setenv("CEILING_DATABASE_URL", f"sqlite:///{tmp_path / 'floor.sqlite3'}")
    monkeypatch.syspath_prepend(str(ROOT))
    sys.modules.pop("benchmarks.ceiling", None)  # (the app is built at import, on that URL)
    module = importlib.import_module("benchmarks.ceiling")
    yield module
    with module.app.app_context():
        module.db.session.remove()
        module.db.engine.dispose()
    sys.modules.pop("benchmarks.ceiling", None)


def _session(client, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = client.post("/api/v1/sessions", json={}, headers=headers)
    assert response.status_code == 201, response.data
    return response.get_json()


def test_the_floor_refuses_what_the_protocol_refuses_and_keeps_what_it_accepts(floor):
    client = floor.app.test_client()
    mine = _session(client)
    token = mine["voter_token"]
    me = {"Authorization": f"Bearer {token}"}
    theirs = _session(client)  # another new voter
    sessions = [mine] + [_session(client, token) for _ in range(2)]
    captioned = next(s for s in sessions if s["criterion"] == "alignment")
    plain = next(s for s in sessions if s["criterion"] != "alignment")
    assert all(t["prompt"] for t in captioned["tasks"])
    assert not any(t["prompt"] for t in plain["tasks"])
    left = {"choice": "left", "response_ms": 900}

    def vote(task, headers=me):
        return client.post(f"/api/v1/tasks/{task['task_id']}/vote", json=left,
                           headers=headers).status_code

    assert vote(plain["tasks"][0], {"Authorization": "Bearer not-a-token"}) == 401
    assert vote(theirs["tasks"][0]) == 409  # another voter's task
    assert vote(captioned["tasks"][0]) == 409  # its caption not read yet
    read = client.post(f"/api/v1/tasks/{captioned['tasks'][0]['task_id']}/read", headers=me)
    assert read.get_json() == {"read_confirmed": True}
    assert vote(captioned["tasks"][0]) == 201
    assert vote(captioned["tasks"][0]) == 409  # a second vote on it
    assert vote(plain["tasks"][0]) == 201
    with floor.app.app_context():
        votes = floor.db.session.execute(select(floor.FloorVote.task_id, floor.FloorVote.voter_id,
                                                floor.FloorVote.winner_image_id)).all()
        tasks = {t.id: t for t in floor.db.session.scalars(select(floor.FloorTask))}
        issued = floor.db.session.scalar(select(func.count()).select_from(floor.FloorTask))
    assert issued == 3 * 4
    assert sorted(v.task_id for v in votes) == sorted(
        [captioned["tasks"][0]["task_id"], plain["tasks"][0]["task_id"]])
    for task_id, voter_id, winner in votes:
        assert voter_id == tasks[task_id].voter_id == mine["voter_id"]
        assert winner == tasks[task_id].left_image_id  # "left" won


def test_the_benchmarks_flow_runs_against_the_floor(floor, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    request_cost = importlib.import_module("request_cost")
    times = request_cost.drive_floor(f"sqlite:///{tmp_path / 'floor.sqlite3'}", 3, warmup=2)
    assert len(times["vote"]) == 3 * 3 and len(times["session"]) == 3


def test_the_floors_writes_queue_on_arenas_writer_lock_and_report_their_wait(floor):
    """The floor's threads wait for SQLite's writer as Arena's do (this process's lock first),
    and its responses say how long, as Arena's: its tail is then compared like for like. The
    bare INSERT reports its wait too."""
    import re
    import threading

    from arena.infra.devices import sqlite_writer

    client = floor.app.test_client()
    first = client.post("/api/v1/sessions", json={})
    timing = re.fullmatch(r'app;dur=([\d.]+), sql;desc="statements";dur=(\d+), '
                          r"writer;dur=([\d.]+), held;dur=([\d.]+)",
                          first.headers["Server-Timing"])
    assert timing and int(timing[2]) >= 3, first.headers  # (session, tasks, voter)
    assert 0 < float(timing[4]) <= float(timing[1])  # (its write held the lock)
    token = first.get_json()["voter_token"]
    held, release = threading.Event(), threading.Event()

    def hold():
        with sqlite_writer:
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    # (the bare INSERT meets at SQLite's lock alone: it does not queue behind the floor's)
    bare = client.post("/vote", json={"choice": "left"})
    assert bare.status_code == 201
    assert float(re.search(r"writer;dur=([\d.]+)", bare.headers["Server-Timing"])[1]) < 250
    threading.Timer(0.3, release.set).start()
    second = client.post("/api/v1/sessions", json={},
                         headers={"Authorization": f"Bearer {token}"})
    holder.join()
    assert second.status_code == 201
    waited = float(re.search(r"writer;dur=([\d.]+)", second.headers["Server-Timing"])[1])
    assert 250 <= waited <= 5000, second.headers
