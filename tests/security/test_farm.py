"""A farm of patient identities, each inside every limit, votes its model up in every pair
it meets: the identities are named for an operator (arena votes suspects), honest voters
with tastes of their own are not."""

from __future__ import annotations

import numpy as np

from arena.analysis.suspects import suspects
from tests.factories import make_campaign, vote_as

ORDER = ["model-0", "model-1", "model-2", "model-3"]


def test_a_farms_identities_are_named_and_honest_voters_are_not(app, runner):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    rng = np.random.default_rng(0)
    with app.app_context():
        make_campaign(n_prompts=3, n_models=4)
        honest = []
        for k in range(30):  # the crowd's order, a neighbouring pair swapped by some
            order = list(ORDER)
            if k % 3 == 0:
                i = int(rng.integers(0, 3))
                order[i], order[i + 1] = order[i + 1], order[i]
            honest.append(vote_as({}, order, sessions=4, seed=k).public_id)
        farm = [vote_as({}, ["model-3", *ORDER[:3]], sessions=4, seed=100 + k).public_id
                for k in range(8)]
        found = suspects("preference")
    assert {s.public_id for s in found} == set(farm), found
    assert all(s.model == "model-3" and s.z > 3 and s.votes >= 6 for s in found)
    listed = runner.invoke(args=["votes", "suspects", "--criterion", "preference"])
    assert listed.exit_code == 0, listed.output
    assert "8 voters favour a model beyond the crowd" in listed.output
    assert all(public_id in listed.output for public_id in farm)
    assert not any(public_id in listed.output for public_id in honest)
