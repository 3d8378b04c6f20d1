"""Test data builders (CTFd-style): small but real campaigns with real image files, owners,
models, voters, and votes cast through the real services. Call them inside an app context.
"""

from __future__ import annotations

import hashlib
import math
from datetime import timedelta

import numpy as np
from flask import current_app
from PIL import Image as PILImage
from sqlalchemy import insert, select

from arena.accounts import owners
from arena.analysis import published
from arena.campaigns import comparisons
from arena.campaigns.demo import seed_shuffle_keys
from arena.catalog import images, registry
from arena.extensions import db
from arena.models import (
    GenModel,
    Image,
    ImageReport,
    Owner,
    Prompt,
    PromptSet,
    Task,
    Vote,
    Voter,
    VotingSession,
    utcnow,
)
from arena.voting import matchmaking, tasks, voters, votes
from arena.voting.votes import ensure_ratings

COLOURS = [(200, 40, 40), (40, 160, 60), (40, 80, 200), (230, 200, 40), (120, 60, 160)]


def solid(color, size=200) -> PILImage.Image:
    return PILImage.new("RGB", (size, size), color)


def make_prompt_set(name: str = "s", texts=("a red cube",), category: str | None = None
                    ) -> PromptSet:
    """A prompt set with one prompt per text; committed."""
    prompt_set = PromptSet(name=name, source="factory")
    db.session.add(prompt_set)
    db.session.flush()
    for position, text in enumerate(texts, start=1):
        db.session.add(Prompt(prompt_set_id=prompt_set.id, position=position, text=text,
                              category=category))
    db.session.commit()
    return prompt_set


def image_rows(set_name: str, source: str, texts: list[str], models: list[GenModel],
               per_model: int) -> list[int]:
    """A prompt set of ``texts`` and ``per_model`` image rows per model and prompt, in bulk
    inserts and without files (matchmaking and swapped gold never read pixels), for
    simulations and benchmarks at scale. Returns the prompt ids, in order."""
    prompt_set = PromptSet(name=set_name, source=source)
    db.session.add(prompt_set)
    db.session.flush()
    db.session.execute(insert(Prompt), [
        {"prompt_set_id": prompt_set.id, "position": i + 1, "text": text}
        for i, text in enumerate(texts)])
    prompt_ids = db.session.scalars(select(Prompt.id).where(
        Prompt.prompt_set_id == prompt_set.id).order_by(Prompt.position)).all()
    db.session.execute(insert(Image), [
        {"sha256": hashlib.sha256(f"{p}-{m.id}-{k}".encode()).hexdigest(), "model_id": m.id,
         "prompt_id": p, "width": 512, "height": 512}
        for p in prompt_ids for m in models for k in range(per_model)])
    return prompt_ids


def make_owner(name: str = "acme") -> tuple[Owner, str]:
    """An owner and their token (through the real service)."""
    token = owners.create_owner(name)
    return owners.get_owner(name), token


def make_model(name: str, owner: Owner | None = None) -> GenModel:
    """A registered model (of a new owner named after it unless one is given)."""
    if owner is None:
        owner, _ = make_owner(f"owner of {name}")
    return registry.register_model(owner, name)


def make_campaign(n_prompts=2, n_models=3, images_per_model=2, gold=True, target_votes=26,
                  image_size=200):
    """Prompts, models, one distinct solid-colour image per (prompt, model, k) of
    ``image_size`` px, all pairwise
    comparisons for the three criteria and, with ``gold``, one validation pair per criterion.
    Returns a dict of the created rows."""
    prompt_set = make_prompt_set(
        f"set-{n_prompts}-{n_models}",
        [f"A red cube number {i} on a green table" for i in range(n_prompts)], "Test")
    prompts = list(db.session.scalars(
        db.select(Prompt).where(Prompt.prompt_set_id == prompt_set.id).order_by(Prompt.id)))
    models = [GenModel(name=f"model-{m}") for m in range(n_models)]
    db.session.add_all(models)
    db.session.flush()
    ensure_ratings([m.id for m in models])
    imgs = {}
    for p_i, p in enumerate(prompts):
        for m_i, m in enumerate(models):
            for k in range(images_per_model):
                color = (COLOURS[m_i % 5][0], (p_i * 37 + k * 11) % 256, COLOURS[m_i % 5][2])
                imgs[(p.id, m.id, k)] = images.store(solid(color, image_size), model_id=m.id,
                                                     prompt_id=p.id)
        db.session.flush()
    n = comparisons.build_comparisons([p.id for p in prompts], target_votes=target_votes)
    gold_pairs = {}
    if gold:
        good = images.store(solid((250, 250, 250)), model_id=None, prompt_id=prompts[0].id)
        bad = images.store(solid((5, 5, 5)), model_id=None, prompt_id=prompts[0].id)
        db.session.flush()
        for criterion in ("preference", "coherence", "alignment"):
            gold_pairs[criterion] = comparisons.add_validation_pair(
                criterion, good, bad, prompts[0].id
            )
    seed_shuffle_keys()
    db.session.commit()
    return {"prompts": prompts, "models": models, "images": imgs, "n_comparisons": n,
            "gold": gold_pairs}


def new_voter(demographics: dict | None = None) -> Voter:
    voter, _ = voters.create_voter(demographics)
    db.session.commit()
    return voter


def start(voter: Voter | None = None, criterion: str | None = "preference", seed: int = 0,
          validation_rate: float | None = None) -> tuple[Voter, VotingSession]:
    """A session for ``voter`` (a new one by default), optionally at a validation rate."""
    if validation_rate is not None:
        current_app.config["VALIDATION_RATE"] = validation_rate
    voter = voter or new_voter()
    return voter, matchmaking.start_session(voter, np.random.default_rng(seed), criterion)


def read_caption(voter: Voter, task: Task) -> None:
    """Pass the read gate as a voter who reads the whole reveal would: the task is shown,
    then confirmed once the reveal has ended (on a simulated clock, so tests do not wait)."""
    tasks.present([task])
    task = db.session.get(Task, task.id)
    caption = tasks.caption_of(task)
    if caption is not None and task.read_confirmed_at is None:
        db.session.refresh(voter)
        begun = max(t for t in (task.shown_at, voter.last_action_at) if t is not None)
        ended = begun + timedelta(milliseconds=tasks.reveal_ms(caption))
        tasks.confirm_read(voter, task.id, now=ended)


def answer(voter: Voter, task: Task, choice: str, response_ms: int | None = None):
    """Vote on ``task`` as a careful voter: reading the caption first where there is one."""
    read_caption(voter, task)
    return votes.cast_vote(voter, task.id, choice, response_ms)


def time_passes() -> timedelta:
    """As if the public pages' period had turned since everything so far: every vote, skip,
    report and voter's stamp moves back in time (order kept) to before the period's cut-off,
    and the figures are taken afresh (arena.analysis.published; the clock itself cannot be
    moved). Returns how far the stamps moved back."""
    stamps = [*db.session.scalars(select(Vote.created_at)),
              *db.session.scalars(select(Task.skipped_at).where(Task.skipped_at.is_not(None))),
              *db.session.scalars(select(ImageReport.created_at))]
    back = timedelta(0)
    if stamps:
        back = max(stamps) - published.cutoff() + timedelta(minutes=1)
        for vote in db.session.scalars(select(Vote)):
            vote.created_at -= back
            vote.public_at = vote.public_at and vote.public_at - back
        for voter in db.session.scalars(select(Voter)):  # (the cohort screen reads these)
            voter.created_at -= back
            voter.earned_at = voter.earned_at and voter.earned_at - back
            voter.first_gold_at = voter.first_gold_at and voter.first_gold_at - back
        for task in db.session.scalars(select(Task).where(Task.skipped_at.is_not(None))):
            task.skipped_at -= back
        for report in db.session.scalars(select(ImageReport)):
            report.created_at -= back
        db.session.commit()
    published.forget()
    return back


def vote_as(demographics, prefer, sessions=6, criterion="preference", seed=0) -> Voter:
    """A voter who always picks the image of the model earliest in ``prefer``."""
    voter = new_voter(demographics)
    rng = np.random.default_rng(seed)
    order = {name: k for k, name in enumerate(prefer)}
    for _ in range(sessions):
        try:
            session = matchmaking.start_session(voter, rng, criterion)
        except matchmaking.NoTasksAvailable:
            break
        for task in session.tasks:
            left = order.get(task.left_image.model.name if task.left_image.model else "", 99)
            right = order.get(task.right_image.model.name if task.right_image.model else "", 99)
            answer(voter, task, "left" if left <= right else "right")
    return voter


def answer_trial(stage, judged_real, report=None, pause_ms: float = 300):
    """Answer the HYPE trial on the evaluator's screen as their page would: it is served
    (the server's clock starts), then answered once the countdown and the exposure are over
    and ``pause_ms`` more (on a simulated clock, so tests do not wait). ``judged_real`` is a
    bool or a function of the trial. Returns what :func:`runs.answer` returns."""
    from arena.hype import runs

    trial = runs.stage_view(stage, np.random.default_rng(0)).trial
    shown = 0.0
    if stage.kind == "time":
        shown = current_app.config["HYPE_COUNTDOWN_MS"]
        if report is not None and report.frames and math.isfinite(report.frame_ms or math.nan):
            shown += report.frames * report.frame_ms
    now = utcnow()  # served that long ago: the clock never runs ahead of the real one
    trial.served_at = now - timedelta(milliseconds=shown + pause_ms)
    db.session.commit()
    judged = judged_real(trial) if callable(judged_real) else judged_real
    return runs.answer(stage, trial.id, judged, report, now=now)
