"""The job queue (arena.infra.jobs): jobs kept in a store every server shares. Two servers
asked to release a voter at once queue one release; a job queued by a server that is gone is
run by a worker started later, in another process; the embedded server's own worker takes
the jobs other processes queue; a release is refused while one is under way."""

from __future__ import annotations

import secrets
import subprocess
import time

import numpy as np
from sqlalchemy import select

from arena.accounts import tokens
from arena.analysis import suspects
from arena.campaigns import campaigns, gold
from arena.catalog import images
from arena.extensions import db
from arena.infra import jobs
from arena.models import Campaign, GenModel, Prompt, Voter
from tests import timing
from tests.conftest import REDIS_URL, job_worker_of
from tests.factories import COLOURS, make_campaign, make_prompt_set, solid, vote_as
from tests.web.helpers import csrf_token

from .servers import ARENA, ROOT, free_port, stop, wait_healthy


def _wait(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + timing.seconds(seconds)
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _published(app) -> int:
    """A published campaign of two models whose gold supply is still to be made."""
    app.config["GOLD_INITIAL_DAMAGED"] = 0  # (publishing itself renders none)
    with app.app_context():
        prompt_set = make_prompt_set("queued", ("a red cube", "a blue ball"))
        for m, name in enumerate(("A", "B")):
            model = GenModel(name=name)
            db.session.add(model)
            db.session.flush()
            for prompt in db.session.scalars(select(Prompt).where(
                    Prompt.prompt_set_id == prompt_set.id)):
                for k in range(2):
                    images.store(solid((COLOURS[m][0], 40 * k, prompt.id % 256), 64),
                                 model_id=model.id, prompt_id=prompt.id)
        db.session.commit()
        campaign = campaigns.create_campaign("Queued", "queued", ["A", "B"],
                                             criteria=["preference"], images_per_model=2)
        campaigns.publish(campaign, np.random.default_rng(0))
        return campaign.id


def _supply_made(app, campaign_id: int) -> bool:
    with app.app_context():
        made, goal = gold.supply(db.session.get(Campaign, campaign_id))["preference"]
        return goal > 0 and made == goal


def _env(app) -> dict:
    """A separate process on ``app``'s instance, database and image folder."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    for key in ("INSTANCE_PATH", "DATABASE_URL", "IMAGE_DIR", "SECRET_KEY", "PSEUDONYM_KEY"):
        env[f"ARENA_{key}"] = str(app.config[key])
    env["ARENA_PRESENT_SIZES"] = "[96, 192]"
    env["ARENA_TICK_EVERY_MIN"] = "0"
    return env


def test_two_servers_asked_to_release_at_once_queue_one_release(make_app):
    """Both operator pages on a shared queue (Redis): the first queues the release, the
    second says one is under way; a worker on either server runs it, once; then a release
    can be asked again."""
    name = f"arena-test-{secrets.token_hex(4)}"
    servers = [make_app(JOBS_URL=REDIS_URL, JOBS_NAME=name) for _ in range(2)]
    with servers[0].app_context():
        make_campaign(n_prompts=2, n_models=3)
        held = vote_as({}, ["model-2", "model-0", "model-1"], sessions=3).public_id
        suspects.hold([held])
        token = tokens.create_token("ops", role="operator")
    clients = [server.test_client() for server in servers]
    forms = []
    for client in clients:
        page = client.get("/admin/").get_data(as_text=True)
        client.post("/admin/sign-in", data={"csrf_token": csrf_token(page), "token": token})
        forms.append(csrf_token(client.get("/admin/").get_data(as_text=True)))
    answers = [client.post(f"/admin/voters/{held}/release", data={"csrf_token": form},
                           follow_redirects=True).get_data(as_text=True)
               for client, form in zip(clients, forms, strict=True)]
    assert f"Releasing {held}" in answers[0]
    assert "A release is being applied" in answers[1]
    assert "Background jobs waiting: release 1" in answers[1]  # (no worker yet)
    with servers[1].app_context():
        assert jobs.pending() == {"release": 1} and jobs.busy("release")
    with job_worker_of(servers[1]):
        _wait(lambda: _released(servers[0], held), "the release")
        _wait(lambda: not _busy(servers[0], "release"), "the release's lock")
    with servers[0].app_context():
        assert jobs.pending() == {}
        assert jobs.submit("release", public_id=held)  # (free again)
        jobs.queue().huey.flush()


def _released(app, public_id: str) -> bool:
    with app.app_context():
        return db.session.scalar(select(Voter.held_at).where(
            Voter.public_id == public_id)) is None


def _busy(app, name: str) -> bool:
    with app.app_context():
        return jobs.busy(name)


def test_a_job_queued_by_a_server_that_is_gone_is_run_by_a_worker_started_later(app):
    """Publishing queues the gold supply; that server goes before any worker runs (nothing of
    the job is in its memory); `arena worker`, started afterwards in its own process on the
    same instance, makes the supply."""
    campaign_id = _published(app)
    with app.app_context():
        assert gold.fill_in_background(campaign_id)
        assert not gold.fill_in_background(campaign_id)  # (queued already)
        assert jobs.pending() == {"gold-fill": 1}
        db.session.remove()
        db.engine.dispose()
    assert not _supply_made(app, campaign_id)
    worker = subprocess.Popen([ARENA, "worker"], env=_env(app), cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _supply_made(app, campaign_id) or worker.poll() is not None,
              "the worker to make the gold supply")
        assert worker.poll() is None, worker.stdout.read()
        _wait(lambda: not _filling(app, campaign_id), "the gold-fill lock")
    finally:
        out = stop(worker)
    assert "job worker is running" in out and "Traceback" not in out, out


def _filling(app, campaign_id: int) -> bool:
    with app.app_context():
        return gold.filling(campaign_id)


def test_the_embedded_server_runs_the_jobs_other_processes_queue(app):
    """`arena serve` (waitress) takes the jobs of its instance's queue with its own worker:
    a fill queued from another process (this one) is made with no other service."""
    campaign_id = _published(app)
    port = free_port()
    server = subprocess.Popen([ARENA, "serve", "--port", str(port)], env=_env(app), cwd=ROOT,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_healthy(port, server)
        with app.app_context():
            assert gold.fill_in_background(campaign_id)
        _wait(lambda: _supply_made(app, campaign_id), "the embedded worker")
    finally:
        out = stop(server)
    assert "Traceback" not in out, out


def test_the_jobs_command_lists_the_waiting_and_lets_go_of_a_stale_lock(app, runner):
    campaign_id = _published(app)
    with app.app_context():
        assert runner.invoke(args=["jobs"]).output == "No job is waiting or under way.\n"
        gold.fill_in_background(campaign_id)
        jobs.submit("release", public_id="nobody")
        listed = runner.invoke(args=["jobs"]).output
        assert "waiting  gold-fill: 1" in listed and "waiting  release: 1" in listed
        assert "queued or under way  release" in listed
        jobs.queue().huey.flush()  # (the queue and every lock emptied)
        assert not gold.filling(campaign_id)
        # (a worker killed mid-job leaves its lock behind)
        jobs.queue().huey.lock_task(f"gold-fill-{campaign_id}").acquire()
        assert gold.filling(campaign_id)
        done = runner.invoke(args=["jobs", "--unlock", f"gold-fill-{campaign_id}"])
        assert done.output == f"gold-fill-{campaign_id}: let go\n"
        assert not gold.filling(campaign_id)
        bad = runner.invoke(args=["jobs", "--unlock", "gold-replenish"])
        assert bad.exit_code == 2 and "is not a unique job's lock" in bad.output
