"""A vote that lands between a session's picks, on PostgreSQL (each statement sees what has
committed): the session still takes the lowest level left, and no comparison twice."""

import numpy as np
import pytest
from sqlalchemy import create_engine, event, select, text, update

from arena.extensions import db
from arena.models import QUEUE_LEVELS, Comparison
from arena.voting import matchmaking
from tests.factories import make_campaign, new_voter


@pytest.mark.parametrize("moved", [0, 1])
def test_a_vote_between_the_picks_skips_no_level_and_repeats_nothing(pg_app, moved):
    """Four comparisons of target 4 (a level per vote): two at level 0, one at 1, one at 2.
    A session of three takes both of level 0, runs out, and picks again a level up; right
    after the first pick another voter's vote moves one of the two taken (``moved``) up to
    level 1. The session must take the comparison that was at level 1 (not the one at 2)
    and not the moved one again."""
    with pg_app.app_context():
        make_campaign(n_prompts=1, n_models=2, images_per_model=2, gold=False,
                      target_votes=4, image_size=8)
        ids = db.session.scalars(select(Comparison.id).where(
            Comparison.criterion == "preference").order_by(Comparison.id)).all()
        assert len(ids) == 4
        levels = dict(zip(ids, (0, 0, 1, 2), strict=True))
        for comparison_id, votes in levels.items():
            db.session.execute(update(Comparison).where(Comparison.id == comparison_id)
                               .values(votes_count=votes, level=votes * QUEUE_LEVELS // 4))
        db.session.commit()
        other = create_engine(pg_app.config["SQLALCHEMY_DATABASE_URI"])
        injected = []
        picks = {matchmaking._pick_query("preference", False, limit) for limit in range(1, 30)}

        def after_pick(_conn, statement, multiparams, params, _options, _result):
            if statement not in picks or injected:
                return
            with other.begin() as connection:  # the rows the pick got; a vote on one of them
                rows = connection.execute(statement, params or multiparams[0]).all()
                injected.append(rows[moved].id)
                connection.execute(text(
                    "UPDATE comparison SET votes_count = votes_count + 1, "
                    "level = (votes_count + 1) * 4 / target_votes WHERE id = :id"),
                    {"id": rows[moved].id})

        event.listen(db.engine, "after_execute", after_pick)
        try:
            session = matchmaking.start_session(new_voter(), np.random.default_rng(3),
                                                "preference")
        finally:
            event.remove(db.engine, "after_execute", after_pick)
            other.dispose()
        taken = [task.comparison_id for task in session.tasks]
    assert injected and len(taken) == len(set(taken)) == 3
    assert sorted(levels[c] for c in taken) == [0, 0, 1], (taken, levels)
