"""Synthetic campaign data for the benchmarks (bulk inserts, no image files)."""

from __future__ import annotations

import numpy as np
from sqlalchemy import insert, select

from arena import criteria as criteria_table
from arena.extensions import db
from arena.models import Comparison, GenModel, Image, utcnow
from tests.factories import image_rows


def grow_campaign(n_prompts: int, criteria=None) -> int:
    """Add synthetic prompts with 4 models x 4 image rows each and all their comparisons
    (96 per prompt and criterion), with bulk inserts. Image rows have no files: matchmaking
    never reads pixels."""
    criteria = criteria or criteria_table.names()
    models = db.session.scalars(select(GenModel)).all()
    prompt_ids = image_rows(f"synthetic-{n_prompts}", "benchmark",
                            [f"synthetic {i}" for i in range(n_prompts)], models[:4], 4)
    rows = db.session.execute(select(Image.id, Image.prompt_id, Image.model_id).where(
        Image.prompt_id.in_(prompt_ids))).all()
    by_prompt = {}
    for image_id, prompt_id, model_id in rows:
        by_prompt.setdefault(prompt_id, []).append((image_id, model_id))
    rng = np.random.default_rng(0)
    batch = []
    for prompt_id, items in by_prompt.items():
        for i, (a, ma) in enumerate(items):
            for b, mb in items[i + 1:]:
                if ma != mb:
                    for criterion in criteria:
                        batch.append({"criterion": criterion, "prompt_id": prompt_id,
                                      "image_a_id": a, "image_b_id": b, "target_votes": 26,
                                      "shuffle_key": int(rng.integers(2**31))})
    for i in range(0, len(batch), 20000):
        db.session.execute(insert(Comparison), batch[i:i + 20000])
    db.session.commit()
    return len(batch)


def grow_gold(max_damaged: int = 400) -> dict[str, int]:
    """Make gold pairs of ordinary ones (no image work: matchmaking never reads pixels) until
    each criterion holds the supply a published campaign would: for alignment a fifth as
    many swapped pairs as ordinary ones (arena.campaigns.gold.wanted at the default rate and
    session size), for the others up to ``max_damaged`` damaged ones. Pairs with no campaign
    join the first. Returns the gold pairs per criterion."""
    from sqlalchemy import func, update

    from arena.models import Campaign

    campaign_id = db.session.scalar(select(Campaign.id).order_by(Campaign.id))
    db.session.execute(update(Comparison).where(Comparison.campaign_id.is_(None))
                       .values(campaign_id=campaign_id))
    made = {}
    for criterion in criteria_table.names():
        def count(gold: bool, c=criterion) -> int:
            return db.session.scalar(select(func.count()).select_from(Comparison).where(
                Comparison.criterion == c, Comparison.is_validation.is_(gold)))
        have, regular = count(True), count(False)
        kind = "swapped" if criterion == "alignment" else "damaged"
        goal = (have + regular) // 6 if kind == "swapped" else max_damaged
        ids = db.session.scalars(select(Comparison.id).where(
            Comparison.criterion == criterion, Comparison.is_validation.is_(False)
        ).order_by(Comparison.shuffle_key).limit(max(0, goal - have))).all()
        for i in range(0, len(ids), 5000):
            db.session.execute(update(Comparison).where(Comparison.id.in_(ids[i:i + 5000]))
                               .values(is_validation=True, gold_kind=kind,
                                       correct_image_id=Comparison.image_a_id))
        made[criterion] = count(True)
    db.session.commit()
    return made


def settle(table: str) -> None:
    """On PostgreSQL, what autovacuum does soon after a bulk load of ``table``: statistics
    (without them the planner expects a handful of rows) and the visibility map, so that a
    measurement does not run beside autovacuum's own pass. Nothing on SQLite."""
    db.session.commit()
    if db.engine.dialect.name == "postgresql":
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql(f"VACUUM ANALYZE {table}")


def fill_votes(n_votes: int, criterion: str = "preference") -> int:
    """Add ``n_votes`` answered tasks and their votes on ``criterion`` with INSERT ... SELECT
    (one voter per pass over the comparisons). The left image wins more often when its model
    id is higher, so the ranking is not flat. Returns the number of votes added."""
    from sqlalchemy import func, text

    from arena.models import Voter, VotingSession

    comparisons = db.session.scalar(select(func.count()).select_from(Comparison).where(
        Comparison.criterion == criterion, Comparison.is_validation.is_(False)))
    n_voters = -(-n_votes // comparisons)
    first = db.session.scalar(select(func.coalesce(func.max(Voter.id), 0)))
    db.session.execute(insert(Voter), [{"public_id": f"bench{first + k}", "earned_at": utcnow()}
                                       for k in range(n_voters)])
    voters = db.session.scalars(select(Voter.id).where(Voter.id > first)).all()
    db.session.execute(insert(VotingSession), [
        {"public_id": f"bench{v}", "voter_id": v, "criterion": criterion} for v in voters])
    db.session.execute(text("""
        INSERT INTO task (session_id, voter_id, comparison_id, position, left_image_id,
                          right_image_id, issued_at, answered_at)
        SELECT s.id, s.voter_id, c.id, c.id, c.image_a_id, c.image_b_id,
               CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
        FROM session s CROSS JOIN comparison c
        WHERE s.voter_id > :first AND c.criterion = :criterion AND c.is_validation = :no
        ORDER BY s.id, c.id
        LIMIT :n"""), {"first": first, "criterion": criterion, "no": False, "n": n_votes})
    db.session.execute(text("""
        INSERT INTO vote (task_id, voter_id, comparison_id, criterion, choice, winner_image_id,
                          loser_image_id, winner_model_id, loser_model_id, is_validation,
                          response_ms, created_at, public_at)
        SELECT t.id, t.voter_id, t.comparison_id, :criterion, x.choice,
               CASE WHEN x.choice = 'left' THEN a.id ELSE b.id END,
               CASE WHEN x.choice = 'left' THEN b.id ELSE a.id END,
               CASE WHEN x.choice = 'left' THEN a.model_id ELSE b.model_id END,
               CASE WHEN x.choice = 'left' THEN b.model_id ELSE a.model_id END,
               :no, 1500, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP
        FROM task t
        JOIN image a ON a.id = t.left_image_id
        JOIN image b ON b.id = t.right_image_id
        JOIN (SELECT t2.id AS tid,
                     CASE WHEN ((t2.id % 1000) * 7919) % 100 < 50 + 8 * (a2.model_id - b2.model_id)
                          THEN 'left' ELSE 'right' END AS choice
              FROM task t2 JOIN image a2 ON a2.id = t2.left_image_id
                           JOIN image b2 ON b2.id = t2.right_image_id
              WHERE t2.voter_id > :first) x ON x.tid = t.id
        WHERE t.voter_id > :first"""), {"first": first, "criterion": criterion, "no": False})
    db.session.commit()
    return db.session.scalar(select(func.count()).select_from(text("vote")))
