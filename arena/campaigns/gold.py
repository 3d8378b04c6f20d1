"""Gold pairs that never run out and look like any other pair.

Besides the operators' hand-made pairs, a published campaign gets gold pairs built from its
own images, with an answer nobody careful gets wrong:

* **swapped** (alignment): the caption of prompt P over an image made for P and one made for
  another prompt Q of the campaign; the image made for P is right. Two ordinary generations,
  so the pair looks like every other alignment pair.
* **damaged** (preference, coherence): an image against a visibly damaged copy of an image
  another model made for the same prompt (:func:`arena.catalog.damage.damage`); the intact
  one is right;
* **consensus** (every criterion): an ordinary pair the crowd has settled beyond doubt,
  turned gold for its remaining votes (:func:`consensus`): two ordinary generations, nothing
  in its pixels or its serving tells it from the pairs around it.

Gold pairs want as many votes as ordinary pairs and are picked by the same least-served rule
(:mod:`arena.voting.matchmaking`), so the two kinds are put in sessions alike and, with a
supply sized to the rate (:func:`top_up`, :func:`replenish`), how often a pair comes says
nothing of its kind (tests/security/frequency.py; not beyond ``GOLD_MAX_DAMAGED`` damaged
copies per campaign and criterion, the cap, where a large campaign wants more). Under active
allocation or early stopping each follows a model pair's decision (arena.campaigns.allocation).
When the gold pairs left to a voter have run more than ``GOLD_SLACK`` sessions ahead of the
ordinary ones, or none is left to them, one more is made (:func:`replenish`), so
validation keeps coming at the configured rate for a voter's whole life.

Nothing about a gold pair may show in timing: it is made after the response that asked for
it has gone (:mod:`arena.infra.deferred`), its images are rendered when stored (a first view
is as quick as any other), and a damaged copy is made from the full-resolution source, so
its two presented sizes relate as any other image's do.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np
from flask import current_app
from scipy.special import ndtri
from sqlalchemy import func, or_, select, update

from arena import criteria
from arena.campaigns import comparisons
from arena.catalog import images
from arena.catalog.damage import damage
from arena.errors import Conflict
from arena.extensions import db
from arena.infra import jobs
from arena.infra.database import param, refresh_statistics, retry_on_lock, write_transaction
from arena.infra.deferred import after_response
from arena.models import (
    STOPPED,
    Campaign,
    Comparison,
    Image,
    Prompt,
    RollupComparison,
    campaign_models,
)
from arena.voting import matchmaking


def _kind(criterion: str) -> str:
    """How ``criterion``'s automatic gold pairs are made (arena.criteria)."""
    return criteria.get(criterion).gold


def wanted(campaign: Campaign, criterion: str) -> int:
    """Gold pairs that keep every one at or under the campaign's target: a session carries
    one with probability VALIDATION_RATE among TASKS_PER_SESSION tasks, so gold votes come to
    rate / (tasks - rate) of the ordinary ones."""
    cfg = current_app.config
    rate, tasks = float(cfg["VALIDATION_RATE"]), int(cfg["TASKS_PER_SESSION"])
    if tasks <= 1 or rate <= 0:
        return 0
    regular = db.session.scalar(select(func.count()).select_from(Comparison).where(
        Comparison.campaign_id == campaign.id, Comparison.criterion == criterion,
        Comparison.is_validation.is_(False)))
    return math.ceil(regular * rate / (tasks - rate))


def top_up(campaign: Campaign, rng: np.random.Generator, fresh: Collection[int] = ()) -> int:
    """Every swapped pair the campaign's captioned criteria now want (cheap: no new image;
    damaged pairs are rendered outside any transaction: :func:`fill`, :func:`replenish`).
    At publishing, and whenever the campaign gains ordinary pairs: a model joins, an image
    arrives. Then ``fresh`` holds the new images, and the new swapped pairs show one of them
    beside an older image, as every new ordinary pair does: new pairs are served before the
    others, and gold made of older images alone would be the pairs without a new image.
    Not committed. Left to the gold check alone, a supply sized for fewer pairs stayed ahead
    of them by most of ``GOLD_SLACK``, and gold could be told by being served more:
    simulated with a first supply half the size it should be (benchmarks/gold_frequency.py
    --supply-rate 0.25), the AUC of the count was still 0.69 after 6,000 sessions."""
    made = 0
    pool = _campaign_images(campaign)
    for criterion in campaign.criteria_list:
        if _kind(criterion) == "damaged":
            continue
        have = _auto_gold(campaign.id, criterion)
        for _ in range(max(0, wanted(campaign, criterion) - have)):
            made += make_pair(campaign, criterion, rng, pool=pool, fresh=fresh) is not None
    return made


def on_gold_wanted(_sender=None, **details) -> None:
    """The ``gold_wanted`` signal (arena.events): check after the response, and from the job
    queue while a database outage stops it (the answer that asked for it is never given
    again, and a voter left without gold would stay so)."""
    after_response("gold-replenish", **details)


def replenish(*, voter_id: int, criterion: str, pool: int = 0,
              rng: np.random.Generator | None = None) -> Comparison | None:
    """One more gold pair for ``criterion`` if one is wanted (:func:`_wanted_in`); committed
    in a short write transaction. Returns the new pair, if any."""
    rng = rng if rng is not None else np.random.default_rng()
    campaign_id = _wanted_in(matchmaking.gold_check(voter_id, criterion, pool, rng), criterion)
    if campaign_id is None:
        # (checked again under the write lock; here so that a campaign at its cap renders
        # no copy only to throw it away, after every gold answer)
        db.session.commit()
        return None
    # a damaged copy is decoded, damaged and encoded now, before the write lock: the
    # transaction below only adds rows (the lock is never held over image work)
    return _write_planned(campaign_id, criterion, _render(_plan(campaign_id, criterion, rng),
                                                          rng), rng)


def _wanted_in(check: matchmaking.GoldCheck | None, criterion: str) -> int | None:
    """The campaign a new gold pair is wanted in after a gold answer, if any: when the gold
    left to the voter runs ahead of the ordinary pairs or none is left to them
    (``check.ahead``); and for damaged pairs, under the cap, also while the campaign holds
    fewer than it wants (:func:`supply_goal`, which ``arena campaign fill-gold`` makes at
    once): without it, a supply of the first ``GOLD_INITIAL_DAMAGED`` grew only while
    gold ran more than ``GOLD_SLACK`` ahead, and stayed nearly that far ahead, to be told
    by it. (Swapped pairs are all made whenever ordinary ones are added, :func:`top_up`.)"""
    if check is None:  # (no ordinary pair left to this voter)
        return None
    if _kind(criterion) != "damaged":
        return check.campaign_id if check.ahead else None
    have = _auto_gold(check.campaign_id, criterion)
    if have >= int(current_app.config["GOLD_MAX_DAMAGED"]):
        return None
    if check.ahead or have < wanted(db.session.get(Campaign, check.campaign_id), criterion):
        return check.campaign_id
    return None


def consensus(campaign: Campaign) -> dict[str, int]:
    """Turn the campaign's ordinary pairs that the crowd has settled beyond doubt into gold
    for the votes they still want: at least ``CONSENSUS_MIN_VOTES`` counted (in the rollup:
    the public pages' votes) and the majority's share above ``CONSENSUS_SHARE`` at 95%
    (a one-sided Wilson bound: twelve votes of twelve, nineteen of twenty), up to
    ``CONSENSUS_MAX_SHARE`` of the criterion's gold pairs. The majority's image is right.
    Two ordinary generations, served as before to their own target: how often the pair
    comes says nothing, and a farm that votes its model up where the crowd is of one mind
    fails gold it cannot see. (What does show: a settled pair is one of a wide gap in
    quality; hence the share.) From the rollup timer; not committed. Returns pairs turned
    per criterion."""
    cfg = current_app.config
    least, share = int(cfg["CONSENSUS_MIN_VOTES"]), float(cfg["CONSENSUS_SHARE"])
    if least <= 0:
        return {}
    z2 = float(ndtri(0.95)) ** 2
    turned = {}
    for criterion in campaign.criteria_list:
        rows = db.session.execute(
            select(Comparison.id, Comparison.image_a_id, Comparison.image_b_id,
                   RollupComparison.first_votes, RollupComparison.votes)
            .join(RollupComparison, RollupComparison.comparison_id == Comparison.id)
            .where(Comparison.campaign_id == campaign.id, Comparison.criterion == criterion,
                   Comparison.is_validation.is_(False), Comparison.level != STOPPED,
                   RollupComparison.criterion == criterion, RollupComparison.votes >= least,
                   RollupComparison.votes < Comparison.target_votes)).all()
        # (a settled pair is one of a wide gap in quality, which shows in its pixels: kept a
        # share of the gold, the pairs of the other kinds beside them hide it)
        room = math.ceil(float(cfg["CONSENSUS_MAX_SHARE"])
                         * _gold_pairs(campaign.id, criterion)) \
            - _auto_gold(campaign.id, criterion, "consensus")
        settled = []
        for pair, a, b, first, n in rows:
            won = max(first, n - first) / n
            lower = (won + z2 / (2 * n) - np.sqrt(z2 * won * (1 - won) / n
                                                  + z2 * z2 / (4 * n * n))) / (1 + z2 / n)
            if lower >= share and len(settled) < room:
                settled.append({"id": pair, "correct": a if 2 * first > n else b})
        for row in settled:
            db.session.execute(update(Comparison).where(Comparison.id == row["id"]).values(
                is_validation=True, correct_image_id=row["correct"], gold_kind="consensus"))
        turned[criterion] = len(settled)
    return turned


def supply_goal(campaign: Campaign, criterion: str, first: bool = False) -> int:
    """The gold pairs of ``criterion`` the campaign will want in all (:func:`wanted`), at
    most ``GOLD_MAX_DAMAGED`` damaged ones (``first``: the first supply, at most
    ``GOLD_INITIAL_DAMAGED``)."""
    goal = wanted(campaign, criterion)
    if _kind(criterion) == "damaged":
        goal = min(goal, int(current_app.config["GOLD_MAX_DAMAGED"]))
        if first:
            goal = min(goal, int(current_app.config["GOLD_INITIAL_DAMAGED"]))
    return goal


def fill(campaign: Campaign, rng: np.random.Generator | None = None, progress=None,
         threads: int | None = None, first: bool = False) -> dict[str, int]:
    """Make now every gold pair the published ``campaign`` will want (:func:`supply_goal`),
    so that no voter's request waits on image work while it fills up: rendering a damaged
    copy (decode, damage, four WebP encodes) takes about a quarter of a second of CPU, and a
    fresh campaign wants hundreds. Copies are rendered ``threads`` at a time (Pillow works
    outside the GIL) and each pair is written in its own short write transaction, so voters
    can vote meanwhile. ``progress(n)`` is called as pairs are made; ``first``: only the
    first supply publishing makes (:func:`supply_goal`). Returns pairs made per criterion.

    Raises
    ------
    Conflict
        The campaign is not published.
    """
    if campaign.published_at is None:
        raise Conflict(f"campaign {campaign.name!r} is not published")
    rng = rng if rng is not None else np.random.default_rng()
    threads = threads or os.cpu_count() or 1
    app = current_app._get_current_object()
    campaign_id, made = campaign.id, {}

    def render(plan: dict, seed: np.random.Generator) -> dict:
        with app.app_context():
            return _render(plan, seed)

    with ThreadPoolExecutor(threads) as pool:
        for criterion in campaign.criteria_list:
            made[criterion] = 0
            while (missing := fill_needed(campaign_id, criterion, first)) > 0:
                plans, taken = [], set()
                for _ in range(min(missing, 2 * threads)):
                    plan = _plan(campaign_id, criterion, rng, exclude=taken)
                    taken.add(plan.get("source", (None,))[0])
                    plans.append(plan)
                db.session.rollback()
                batch = made[criterion]
                for ready in pool.map(render, plans, rng.spawn(len(plans))):
                    if _write_planned(campaign_id, criterion, ready, rng) is not None:
                        made[criterion] += 1
                        if progress:
                            progress(1)
                if made[criterion] == batch:
                    break  # the campaign's images allow no new pair
    refresh_statistics(Comparison)
    db.session.commit()
    return made


def fill_in_background(campaign_id: int) -> bool:
    """Queue the making of the published campaign's whole gold supply (:func:`fill`, one
    copy at a time) for the job worker, so that publishing returns at once and no voter's
    request renders the copies later; False when it is queued or under way already.
    Progress: :func:`supply`."""
    return jobs.submit("gold-fill", campaign_id=campaign_id)


def fill_published(campaign_id: int) -> None:
    """The ``gold-fill`` job: :func:`fill` the campaign, if it is (still) published."""
    campaign = db.session.get(Campaign, campaign_id)
    if campaign is not None and campaign.published_at is not None:
        fill(campaign, threads=1)


def fill_lock_args() -> list[dict]:
    """The ``gold-fill`` jobs there can be: one per published campaign."""
    return [{"campaign_id": cid} for cid in db.session.scalars(
        select(Campaign.id).where(Campaign.published_at.is_not(None)))]


def filling(campaign_id: int) -> bool:
    """Whether the campaign's gold supply is queued or being made."""
    return jobs.busy("gold-fill", campaign_id=campaign_id)


def supply(campaign: Campaign) -> dict[str, tuple[int, int]]:
    """The campaign's automatic gold pairs per criterion: ``(made, goal)``, the goal being
    what :func:`fill` makes (:func:`supply_goal`)."""
    return {criterion: (_auto_gold(campaign.id, criterion), supply_goal(campaign, criterion))
            for criterion in campaign.criteria_list}


def fill_needed(campaign_id: int, criterion: str, first: bool = False) -> int:
    """How many gold pairs of ``criterion`` the campaign still lacks (:func:`supply_goal`)."""
    campaign = db.session.get(Campaign, campaign_id)
    return max(0, supply_goal(campaign, criterion, first) - _auto_gold(campaign_id, criterion))


def _write_planned(campaign_id: int, criterion: str, ready: dict,
                   rng: np.random.Generator) -> Comparison | None:
    """The planned (and rendered) pair added in one short write transaction, unless the
    campaign is no longer published for ``criterion`` or is at its cap."""
    db.session.rollback()
    made = []

    def write():
        made.clear()
        with write_transaction():
            campaign = db.session.get(Campaign, campaign_id)
            if campaign is not None and campaign.published_at is not None \
                    and criterion in campaign.criteria_list and not _at_cap(campaign_id, criterion):
                made.append(make_pair(campaign, criterion, rng, ready=ready))

    retry_on_lock(write)
    if not made or made[0] is None:  # (a copy rendered for nothing leaves no file behind)
        if "prepared" in ready:
            images.discard(ready["prepared"])
        return None
    return made[0]


def _plan(campaign_id: int, criterion: str, rng, exclude=frozenset()) -> dict:
    """For a damaged pair: the source image chosen (not one in ``exclude``), and either a
    copy of it that can be reused or the source's stored name to render a copy from (see
    :func:`_render`). Reads only; {} for a swapped pair."""
    campaign = db.session.get(Campaign, campaign_id)
    if campaign is None or _kind(criterion) != "damaged":
        return {}
    pool = _campaign_images(campaign)
    if len(pool) < 2:
        return {}
    source_id, prompt, copy, partner = _damage_plan(campaign, criterion, pool, rng, exclude)
    if copy is not None:
        return {"source": (source_id, prompt), "copy_id": copy.id, "partner": partner}
    return {"source": (source_id, prompt), "partner": partner,
            "sha256": db.session.get(Image, source_id).sha256}


def _render(plan: dict, rng) -> dict:
    """The plan with its new damaged copy prepared (arena.catalog.images.prepare), as
    ``make_pair(ready=...)`` takes it: image work only, no database."""
    if "sha256" not in plan:
        return plan
    source = images.decode_stored_bytes(plan["sha256"])
    return {"source": plan["source"], "partner": plan["partner"],
            "prepared": images.prepare(damage(source, rng))}


def _at_cap(campaign_id: int, criterion: str) -> bool:
    if _kind(criterion) != "damaged":
        return False
    return _auto_gold(campaign_id, criterion) >= int(current_app.config["GOLD_MAX_DAMAGED"])


def _auto_gold(campaign_id: int, criterion: str, kind: str | None = None) -> int:
    """The campaign's automatic gold pairs of ``criterion`` (of its kind, :func:`_kind`, or
    ``kind``): run after every gold answer at the cap, so a statement built once, a
    covering search of ix_comparison_campaign_gold that reads only the pairs it counts."""
    return db.session.execute(_auto_gold_count(), {
        "p_campaign": campaign_id, "p_criterion": criterion,
        "p_kind": kind or _kind(criterion)}).scalar()


def _gold_pairs(campaign_id: int, criterion: str) -> int:
    return db.session.scalar(select(func.count()).select_from(Comparison).where(
        Comparison.campaign_id == campaign_id, Comparison.criterion == criterion,
        Comparison.is_validation))


@cache
def _auto_gold_count():
    return select(func.count()).select_from(Comparison).where(
        Comparison.campaign_id == param("p_campaign", Comparison.campaign_id),
        Comparison.criterion == param("p_criterion", Comparison.criterion),
        Comparison.gold_kind == param("p_kind", Comparison.gold_kind))


def make_pair(campaign: Campaign, criterion: str, rng: np.random.Generator,
              attempts: int = 8, ready: dict | None = None, pool: list | None = None,
              fresh: Collection[int] = ()) -> Comparison | None:
    """A new automatic gold pair (not committed), or None when the campaign's images allow
    no new one. ``ready`` may hold a damaged copy prepared ahead (see :func:`replenish`);
    ``pool`` the campaign's images, read once by a caller making many (:func:`top_up`);
    ``fresh`` images a swapped pair's right image is to be among (:func:`top_up`)."""
    pool = pool if pool is not None else _campaign_images(campaign)
    if len(pool) < 2:
        return None
    if ready:
        return _pair_from(campaign, criterion, pool, ready)
    for _ in range(attempts):
        if _kind(criterion) == "swapped":
            pair = _swapped(campaign, criterion, pool, rng, fresh)
        else:
            pair = _damaged(campaign, criterion, pool, rng)
        if pair is not None:
            return pair
    return None


def _pair_from(campaign: Campaign, criterion: str, pool, ready: dict) -> Comparison | None:
    """The damaged pair planned by :func:`_render`, or None when it no longer fits
    (another request took it meanwhile): nothing is ever rendered here, under the lock; the
    next gold answer plans again."""
    source_id, prompt = ready["source"]
    partner = ready.get("partner", source_id)
    held = {(image, p) for image, p, _ in pool}
    if (source_id, prompt) not in held or (partner, prompt) not in held:
        return None
    if "copy_id" in ready:
        copy = db.session.get(Image, ready["copy_id"])
    else:
        copy, _ = images.add_prepared(ready["prepared"], model_id=None, prompt_id=prompt)
        copy.source_id = copy.source_id or source_id
        db.session.flush()
    if copy is None or copy.source_id != source_id \
            or _exists(criterion, partner, copy.id, campaign.pool):
        return None
    return _add(campaign, criterion, partner, copy.id, prompt, "damaged")


def _campaign_images(campaign: Campaign) -> list[tuple[int, int, int]]:
    """(image id, prompt id, model id) of every image the campaign's ordinary pairs are made
    of (arena.campaigns.comparisons.images_by_prompt): a gold pair of images met nowhere
    else, beyond a model's first ``images_per_model``, would stand out."""
    prompt_ids = db.session.scalars(select(Prompt.id).where(
        Prompt.prompt_set_id == campaign.prompt_set_id)).all()
    model_ids = db.session.scalars(select(campaign_models.c.model_id).where(
        campaign_models.c.campaign_id == campaign.id)).all()
    by_prompt = comparisons.images_by_prompt(prompt_ids, model_ids, campaign.images_per_model)
    return [(image, prompt, model) for prompt, items in by_prompt.items()
            for image, model in items]


def _exists(criterion: str, a: int, b: int, pool: int) -> bool:
    low, high = min(a, b), max(a, b)
    return db.session.scalar(select(Comparison.id).where(
        Comparison.pool == pool, Comparison.criterion == criterion,
        Comparison.image_a_id == low, Comparison.image_b_id == high)) is not None


def _add(campaign: Campaign, criterion: str, right: int, wrong: int, prompt_id: int,
         kind: str) -> Comparison:
    pair = Comparison(criterion=criterion, campaign_id=campaign.id, prompt_id=prompt_id,
                      image_a_id=min(right, wrong), image_b_id=max(right, wrong),
                      is_validation=True, correct_image_id=right,
                      target_votes=campaign.target_votes, gold_kind=kind,
                      pool=campaign.pool)
    db.session.add(pair)
    db.session.flush()
    return pair


def _swapped(campaign, criterion: str, pool, rng, fresh: Collection[int] = ()
             ) -> Comparison | None:
    """A gold pair of ``criterion``: the caption of one image's prompt over it (one of
    ``fresh``, if given) and an image of another prompt by another model: an ordinary pair
    never has two images of one model (with four models, a quarter of swapped pairs had,
    for anyone who knows the models' styles to spot)."""
    rights = [item for item in pool if item[0] in fresh] if fresh else pool
    if not rights:
        return None
    right, prompt, model = rights[int(rng.integers(len(rights)))]
    others = [image for image, p, m in pool if p != prompt and m != model]
    if not others:
        return None
    wrong = others[int(rng.integers(len(others)))]
    if _exists(criterion, right, wrong, campaign.pool):
        return None
    return _add(campaign, criterion, right, wrong, prompt, "swapped")


def _damage_plan(campaign, criterion, pool, rng, exclude=frozenset()
                 ) -> tuple[int, int, Image | None, int]:
    """The source image of the next damaged pair, its prompt, a copy of it not yet paired
    with that partner for ``criterion`` (None: a new copy is needed), and the partner: an
    intact image another model made for the same prompt. Sources without a damaged pair of
    this criterion first, reusing a copy made for another criterion; once every image has
    one, a random image (to be damaged differently), so the supply has no end. The partner
    is another model's image because an image against its own copy is told by its pixels
    alone (the two sides' grey levels correlate far beyond any ordinary pair's), and an
    ordinary pair never holds two images of one model."""
    paired = set(db.session.scalars(
        select(Image.source_id).join(Comparison, or_(Comparison.image_a_id == Image.id,
                                                     Comparison.image_b_id == Image.id))
        .where(Comparison.campaign_id == campaign.id, Comparison.criterion == criterion,
               Comparison.gold_kind == "damaged", Image.source_id.is_not(None))))
    every = [(i, p) for i, p, _ in pool]
    fresh = [(i, p) for i, p in every if i not in paired and i not in exclude]
    source_id, prompt = (fresh or every)[int(rng.integers(len(fresh or every)))]
    maker = {image: model for image, _, model in pool}
    others = [i for i, p, m in pool if p == prompt and m != maker[source_id]]
    partner = others[int(rng.integers(len(others)))] if others else source_id
    copies = db.session.scalars(select(Image).where(Image.source_id == source_id)).all()
    copy = next((c for c in copies if not _exists(criterion, partner, c.id, campaign.pool)),
                None)
    return source_id, prompt, copy, partner


def _damaged(campaign, criterion, pool, rng) -> Comparison | None:
    """An image of the campaign against a damaged copy of another model's image of its
    prompt (:func:`_damage_plan`), the copy made here when none can be reused."""
    source_id, prompt, copy, partner = _damage_plan(campaign, criterion, pool, rng)
    if copy is None:  # damaged at full resolution, like any upload in its sizes and bytes
        source = db.session.get(Image, source_id)
        copy = images.store(damage(images.decode_stored(source), rng), model_id=None,
                            prompt_id=prompt)
        copy.source_id = source_id
        db.session.flush()
    return _add(campaign, criterion, partner, copy.id, prompt, "damaged")
