"""Active allocation and early stopping: a campaign's votes go where its ranking is unsure.

A campaign with ``allocation = "active"`` (or ``early_stop``) is refreshed from its counted
votes every few minutes (``arena votes rollup``'s timer, or ``arena campaign allocate``):
:func:`arena.ranking.allocation.allocate` says how many more votes each model pair should
get, and that many of the pair's least-voted comparisons are opened (wanting one more vote)
while the rest rest (at the top ``level``, served only once nothing open is left). With
early stopping, a settled pair's comparisons stop (``STOPPED``: served to nobody), so a
criterion whose order is settled stops, and so does the campaign once all of them are.
Matchmaking serves the lowest level first (never a stopped one), through the same index,
so a session costs what it costs under balanced allocation. Balanced campaigns are never touched.

Gold pairs follow the same decisions, or how often a pair comes would tell them (the pairs
in focus come often, the settled ones hardly at all, and gold left balanced sits between):
each gold pair belongs to its two models' pair (a damaged copy against its source, to a
pair drawn by its shuffle key, in proportion to the pairs' comparisons) and that pair's
share of its gold is opened as its share of ordinary comparisons is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.orm import aliased

from arena.errors import Invalid
from arena.extensions import db
from arena.infra.database import at_least
from arena.models import KEYS, QUEUE_LEVELS, STOPPED, Campaign, Comparison, Image, Vote
from arena.ranking.allocation import Allocation, allocate
from arena.ranking.pairs import PairCounts

ALLOCATIONS = ("balanced", "active")


@dataclass(frozen=True)
class Decision:
    """One criterion's refresh: the models (ids, in the allocation's index order), what was
    decided, and how many comparisons were opened."""

    criterion: str
    model_ids: list[int]
    allocation: Allocation
    opened: int
    votes: int
    balanced: int  # the votes balanced allocation asks of this criterion

    @property
    def saved(self) -> int:
        """Votes balanced allocation would still ask for that this campaign no longer will."""
        return max(self.balanced - int(np.triu(self.allocation.wanted, 1).sum()), 0) \
            if self.allocation.done else 0


def _comparisons(campaign: Campaign, criterion: str, gold: bool = False):
    """The campaign's ordinary (or gold) comparisons of ``criterion``, least-voted first: id,
    the two models, shuffle key."""
    image_a, image_b = aliased(Image), aliased(Image)
    return db.session.execute(
        select(Comparison.id, image_a.model_id, image_b.model_id, Comparison.shuffle_key)
        .join(image_a, image_a.id == Comparison.image_a_id)
        .join(image_b, image_b.id == Comparison.image_b_id)
        .where(Comparison.campaign_id == campaign.id, Comparison.criterion == criterion,
               Comparison.is_validation.is_(gold))
        .order_by(Comparison.votes_count, Comparison.shuffle_key)).all()


def _gold_by_pair(campaign: Campaign, criterion: str, index: dict[int, int],
                  per_pair: dict[tuple[int, int], list]) -> dict[tuple[int, int], list[int]]:
    """The ids of the criterion's gold pairs (least-voted first) by the model pair they
    follow: their own two models' if those make a pair of the campaign, else one drawn by
    shuffle key with each pair's chance its share of the ordinary comparisons."""
    pairs = sorted(per_pair)
    edges = np.cumsum([len(per_pair[p]) for p in pairs], dtype=float)
    gold: dict[tuple[int, int], list[int]] = defaultdict(list)
    if not pairs:
        return gold
    for row in _comparisons(campaign, criterion, gold=True):
        pair = tuple(sorted((index.get(row[1], -1), index.get(row[2], -1))))
        if pair not in per_pair:
            drawn = np.searchsorted(edges, row[3] / KEYS * edges[-1], side="right")
            pair = pairs[min(int(drawn), len(pairs) - 1)]
        gold[pair].append(row[0])
    return gold


def counts(campaign: Campaign, criterion: str, index: dict[int, int],
           before: datetime | None = None) -> PairCounts:
    """Counted votes (not flagged, not gold; stamped before ``before`` if given) on the
    campaign's comparisons of ``criterion``, per voter and prompt as the leaderboard counts
    them, over the models of ``index`` (model id -> row)."""
    query = (select(Vote.voter_id, Comparison.prompt_id, Vote.winner_model_id,
                    Vote.loser_model_id, func.count())
             .join(Comparison, Comparison.id == Vote.comparison_id)
             .where(Comparison.campaign_id == campaign.id, Vote.criterion == criterion,
                    Vote.is_validation.is_(False), Vote.flags == 0)
             .group_by(Vote.voter_id, Comparison.prompt_id, Vote.winner_model_id,
                       Vote.loser_model_id))
    if before is not None:
        query = query.where(Vote.created_at < before)
    rows = [row for row in db.session.execute(query) if row[2] in index and row[3] in index]
    voter, prompt, winners, losers, count = (list(column) for column in zip(*rows, strict=True)) \
        if rows else ([], [], [], [], [])
    return PairCounts.crossed(len(index), voter, [-1 if p is None else p for p in prompt],
                              [index[w] for w in winners], [index[lo] for lo in losers],
                              np.array(count, dtype=float))


def refresh(campaign: Campaign, budget: int | None = None, *, due_only: bool = False
            ) -> list[Decision]:
    """Decide each criterion's next ``budget`` votes (``ALLOCATION_BUDGET``) and open that
    many comparisons; commits. Idempotent between votes; safe to run twice at once (each
    comparison's target and level are set from its own row's count). With ``due_only``
    (the timer), nothing is decided until the budget per criterion has come in since the
    last decision: deciding after every few votes makes the design follow the data's noise,
    and intervals then under-cover (benchmarks/coverage.py, "active allocation": fifteen
    close models covered 91.0% decided every 1,000 votes, 93.8% every 2,000)."""
    cfg = current_app.config
    budget = cfg["ALLOCATION_BUDGET"] if budget is None else budget
    held = db.session.scalar(select(func.coalesce(func.sum(Comparison.votes_count), 0))
                             .where(Comparison.campaign_id == campaign.id,
                                    Comparison.is_validation.is_(False)))
    if due_only and campaign.allocated_votes is not None \
            and held - campaign.allocated_votes < budget * len(campaign.criteria_list):
        return []
    campaign.allocated_votes = held
    active = campaign.allocation == "active"
    decisions = []
    for criterion in campaign.criteria_list:
        rows = _comparisons(campaign, criterion)
        model_ids = sorted({m for row in rows for m in row[1:3]})
        index = {m: k for k, m in enumerate(model_ids)}
        per_pair: dict[tuple[int, int], list] = defaultdict(list)
        for row in rows:
            i, j = sorted((index[row[1]], index[row[2]]))
            per_pair[i, j].append(row)
        n = len(model_ids)
        cap = np.zeros((n, n))
        for (i, j), members in per_pair.items():
            cap[i, j] = cap[j, i] = len(members) * campaign.target_votes
        data = counts(campaign, criterion, index)
        wins = data.matrix()
        decided = allocate(data, cap, budget, level=cfg["ALLOCATION_LEVEL"],
                           exploration=cfg["ALLOCATION_EXPLORATION"] if active else 1.0,
                           stop=campaign.early_stop)
        votes = wins + wins.T
        gold = _gold_by_pair(campaign, criterion, index, per_pair)
        opened = 0
        for (i, j), members in per_pair.items():
            ids, gold_ids = [row[0] for row in members], gold.get((i, j), [])
            if campaign.early_stop and decided.settled[i, j]:
                _stop(ids + gold_ids)
                continue
            more = int(decided.wanted[i, j] - votes[i, j])
            opened += _open(ids, more)
            _open(gold_ids, math.ceil(more * len(gold_ids) / len(members)))
        db.session.commit()
        decisions.append(Decision(criterion, model_ids, decided, opened,
                                  int(np.triu(votes, 1).sum()), int(np.triu(cap, 1).sum())))
    return decisions


def _open(ids: list[int], more: int) -> int:
    """Spread ``more`` votes over comparisons ``ids`` (least-voted first): each opened one
    wants its share more than it has; the others rest. Returns the comparisons opened."""
    base, extra = divmod(max(more, 0), max(len(ids), 1))
    groups = [(ids[:extra], base + 1), (ids[extra:], base)]
    for members, wanted in groups:
        if not members:
            continue
        if wanted:
            target = Comparison.votes_count + wanted
            values = {"target_votes": target,
                      "level": Comparison.votes_count * QUEUE_LEVELS // target}
        else:
            values = {"target_votes": at_least(Comparison.votes_count, 1),
                      "level": QUEUE_LEVELS}
        for start in range(0, len(members), 5000):
            db.session.execute(update(Comparison)
                               .where(Comparison.id.in_(members[start:start + 5000]))
                               .values(**values))
    return len(ids) if base else extra


def _stop(ids: list[int]) -> None:
    """Take comparisons ``ids`` out of the queue (their pair is settled)."""
    for start in range(0, len(ids), 5000):
        db.session.execute(update(Comparison).where(Comparison.id.in_(ids[start:start + 5000]))
                           .values(target_votes=at_least(Comparison.votes_count, 1),
                                   level=STOPPED))


def balance(campaign: Campaign) -> int:
    """Give every comparison of the campaign its balanced target again (when a campaign goes
    back to balanced allocation); commits. Returns the comparisons changed."""
    changed = db.session.execute(
        update(Comparison).where(Comparison.campaign_id == campaign.id)
        .values(target_votes=campaign.target_votes,
                level=Comparison.votes_count * QUEUE_LEVELS // campaign.target_votes)).rowcount
    db.session.commit()
    return changed


def states(campaign: Campaign, before: datetime | None = None
           ) -> dict[str, tuple[list[int], Allocation]]:
    """Per criterion of an active or early-stopping campaign, from its counted votes (before
    ``before``): its models' ids and where its order stands (which pairs are settled, whether
    it is, and about how many more votes it needs), caps aside."""
    if campaign.allocation != "active" and not campaign.early_stop:
        return {}
    model_ids = sorted(m.id for m in campaign.models)
    index = {m: k for k, m in enumerate(model_ids)}
    cap = np.full((len(model_ids), len(model_ids)), np.inf)
    np.fill_diagonal(cap, 0)
    return {criterion: (model_ids, allocate(counts(campaign, criterion, index, before),
                                            cap, 0, level=current_app.config["ALLOCATION_LEVEL"]))
            for criterion in campaign.criteria_list}


def describe(decision: Decision, names: dict[int, str]) -> str:
    """A few lines on one criterion's decision: each adjacent pair's state, and the rest."""
    found = decision.allocation
    lines = [f"{decision.criterion}: {decision.votes:,d} votes counted, "
             f"{decision.opened:,d} comparisons open; "
             + ("settled" if found.done else "not settled yet")]
    for i, j in found.adjacent():
        state = "settled" if found.settled[i, j] else f"z = {found.z[i, j]:.1f}"
        lines.append(f"  {names.get(decision.model_ids[i], '?')} ahead of "
                     f"{names.get(decision.model_ids[j], '?')}: {state}")
    if decision.saved:
        lines.append(f"  {decision.saved:,d} votes saved against balanced allocation")
    return "\n".join(lines)


def check_allocation(allocation: str) -> str:
    """``allocation`` if known; raises Invalid (field "allocation") otherwise."""
    if allocation not in ALLOCATIONS:
        raise Invalid(f"allocation must be one of {', '.join(ALLOCATIONS)}",
                      field="allocation")
    return allocation


def configure(campaign: Campaign, allocation: str, early_stop: bool) -> list[Decision]:
    """Set how the campaign's votes are spread and commit; a published campaign is refreshed
    at once (or given its balanced targets back). Raises Invalid on an unknown allocation."""
    campaign.allocation = check_allocation(allocation)
    campaign.early_stop = bool(early_stop)
    db.session.commit()
    if campaign.published_at is None:
        return []
    if allocation == "active" or early_stop:
        return refresh(campaign)
    balance(campaign)
    return []


def refresh_all() -> list[tuple[str, list[Decision]]]:
    """Refresh every published campaign that allocates actively or stops early, where due."""
    campaigns = db.session.scalars(select(Campaign).where(
        Campaign.published_at.is_not(None),
        (Campaign.allocation == "active") | Campaign.early_stop.is_(True))).all()
    return [(campaign.name, refresh(campaign, due_only=True)) for campaign in campaigns]
