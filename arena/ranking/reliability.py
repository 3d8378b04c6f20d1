"""Each voter's reliability: the probability that their answers came from a look at the
images.

A voter is either attentive, and answers as the crowd's Bradley-Terry strengths predict (the
first model wins with probability ``expit(s_a - s_b)``; a gold pair rightly but for a
``slip``), or blind, and answers either side with probability one half whatever is shown
(a random tapper, one who always taps the left image, a script). The crowd's share of
attentive voters is found by EM; each voter's reliability is the posterior probability
that they are attentive (:func:`reliability`). Blind voters' evidence adds up answer by
answer, so they fall towards 0 as they vote, and a voter of a handful of answers keeps
about the crowd's share.

A taste of one's own costs little: a disagreement on a close pair (``expit`` near one
half) is about as likely from an attentive voter as from a blind one, and a voter who
agrees with the crowd on every other pair is far from blind; only answers no likelier than
a coin's on clear pairs, or wrong gold answers, lower it.

:func:`fit` alternates the two: strengths weighted by the voters' reliability, then the
reliability from the strengths, a few rounds. :func:`weighted` hands the result to the
ranking core as each voter's votes scaled by it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import expit

from arena.ranking.bradley_terry import bradley_terry
from arena.ranking.pairs import PairCounts

SLIP = 0.05  # an attentive voter's share of wrong gold answers (a damaged copy missed)


@dataclass(frozen=True)
class Reliability:
    """Per voter (unit) the probability ``r`` of being attentive and the answers it rests
    on; ``crowd``: the crowd's share of attentive voters."""

    r: np.ndarray
    answers: np.ndarray
    crowd: float


def reliability(data: PairCounts, log_strengths: np.ndarray, gold_right=None,
                gold_wrong=None, *, slip: float = SLIP, iterations: int = 500,
                tol: float = 1e-10) -> Reliability:
    """Each unit's (voter's) probability of being attentive, from their votes in ``data``
    (units are voters; ties are no evidence) given the crowd's ``log_strengths``, and their
    gold answers (``gold_right[u]``, ``gold_wrong[u]``; none when None).

    Raises
    ------
    ValueError
        On a slip outside (0, 0.5), or gold arrays of another length than the units.
    """
    if not 0 < slip < 0.5:
        raise ValueError("slip must be in (0, 0.5)")
    n = data.n_units
    right = np.zeros(n) if gold_right is None else np.asarray(gold_right, dtype=float)
    wrong = np.zeros(n) if gold_wrong is None else np.asarray(gold_wrong, dtype=float)
    if right.shape != (n,) or wrong.shape != (n,):
        raise ValueError("gold answers must be given per unit")
    s = np.asarray(log_strengths, dtype=float)
    p_ab = expit(s[data.a] - s[data.b])  # the first model of each row wins, attentively
    # log(likelihood if attentive / if blind), summed per voter over their answers
    ratio = (np.bincount(data.unit, weights=data.ab * np.log(2 * p_ab)
                         + data.ba * np.log(2 * (1 - p_ab)), minlength=n)
             + right * np.log(2 * (1 - slip)) + wrong * np.log(2 * slip))
    answers = (np.bincount(data.unit, weights=data.ab + data.ba, minlength=n) + right + wrong)
    crowd = 0.5
    for _ in range(iterations):
        posterior = expit(ratio + np.log(crowd / (1 - crowd)))
        new = float(np.clip(posterior.mean(), 1e-6, 1 - 1e-6)) if n else crowd
        if abs(new - crowd) < tol:
            break
        crowd = new
    return Reliability(expit(ratio + np.log(crowd / (1 - crowd))), answers, crowd)


def weighted(data: PairCounts, r: np.ndarray) -> PairCounts:
    """``data`` with each unit's outcomes scaled by its ``r[unit]``."""
    w = np.asarray(r, dtype=float)[data.unit]
    return replace(data, ab=data.ab * w, ba=data.ba * w, tie=data.tie * w)


def fit(data: PairCounts, gold_right=None, gold_wrong=None, *, rounds: int = 5,
        **options) -> tuple[Reliability, np.ndarray]:
    """The voters' reliability and the strengths weighted by it, alternated ``rounds``
    times from the unweighted fit (the blind voters' answers pull those strengths towards
    each other, so ``r`` is measured again against sharper ones). Returns the reliability
    and the final weighted log-strengths."""
    strengths = bradley_terry(data.matrix()).log_strengths
    found = reliability(data, strengths, gold_right, gold_wrong, **options)
    for _ in range(rounds - 1):
        strengths = bradley_terry(weighted(data, found.r).matrix()).log_strengths
        found = reliability(data, strengths, gold_right, gold_wrong, **options)
    return found, strengths
