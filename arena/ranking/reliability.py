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

From choices alone a blind voter cannot be told from one who finds every model alike, and
the model measures attention against the crowd's taste: a disagreement on a close pair costs
little (``expit`` near one half), but a minority that orders the models its own way (the
crowd's order reversed, a few models it prefers) is taken for blind. :func:`taste_check`
says so: blind voters' answers, pooled, favour no model; a minority's favour its own.

:func:`fit` alternates the two: strengths weighted by the voters' reliability, then the
reliability from the strengths, a few rounds. :func:`weighted` hands the result to the
ranking core as each voter's votes scaled by it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import chdtrc, expit, log_expit

from arena.ranking.bradley_terry import bradley_terry
from arena.ranking.pairs import PairCounts

SLIP = 0.05  # an attentive voter's share of wrong gold answers (a damaged copy missed)
LOG2 = float(np.log(2.0))
NO_WEIGHT = 1e-9


@dataclass(frozen=True)
class Reliability:
    """Per voter (unit) the probability ``r`` of being attentive and the answers it rests
    on; ``crowd``: the crowd's share of attentive voters."""

    r: np.ndarray
    answers: np.ndarray
    crowd: float


def reliability(data: PairCounts, log_strengths: np.ndarray, gold_right=None,
                gold_wrong=None, *, votes: bool = True, slip: float = SLIP,
                iterations: int = 500, tol: float = 1e-10) -> Reliability:
    """Each unit's (voter's) probability of being attentive, from their votes in ``data``
    (units are voters; ties are no evidence) given the crowd's ``log_strengths``, and their
    gold answers (``gold_right[u]``, ``gold_wrong[u]``; none when None); without ``votes``,
    from the gold answers alone (no taste is taken for blindness, but a voter of few gold
    answers keeps about the crowd's share).

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
    gap = s[data.a] - s[data.b]  # the first model of each row wins, attentively, expit(gap)
    # log(likelihood if attentive / if blind), summed per voter over their answers (through
    # log_expit: the wide gaps unanimous votes fit stay finite)
    evidence = (data.ab * (LOG2 + log_expit(gap)) + data.ba * (LOG2 + log_expit(-gap))
                if votes else np.zeros(data.unit.size))
    ratio = (np.bincount(data.unit, weights=evidence, minlength=n)
             + right * np.log(2 * (1 - slip)) + wrong * np.log(2 * slip))
    answers = (np.bincount(data.unit, weights=data.ab + data.ba, minlength=n) + right + wrong)
    crowd = 0.5
    for _ in range(iterations):
        posterior = expit(ratio + np.log(crowd / (1 - crowd)))
        new = float(np.clip(posterior.mean(), 1e-6, 1 - 1e-6)) if n else crowd
        if abs(new - crowd) < tol:
            break
        crowd = new
    r = expit(ratio + np.log(crowd / (1 - crowd)))
    # (a weight this small is none: votes scaled by 1e-256 tie a unanimous crowd's graph
    # together with threads whose fit overflows)
    return Reliability(np.where(r < NO_WEIGHT, 0.0, r), answers, crowd)


def weighted(data: PairCounts, r: np.ndarray) -> PairCounts:
    """``data`` with each unit's outcomes scaled by its ``r[unit]``."""
    w = np.asarray(r, dtype=float)[data.unit]
    return replace(data, ab=data.ab * w, ba=data.ba * w, tie=data.tie * w)


def fit(data: PairCounts, gold_right=None, gold_wrong=None, *, rounds: int = 5,
        **options) -> tuple[Reliability, np.ndarray]:
    """The voters' reliability and the strengths weighted by it, alternated ``rounds``
    times from the unweighted fit (the blind voters' answers pull those strengths towards
    each other, so ``r`` is measured again against sharper ones; once from gold alone).
    Returns the reliability and the strengths it was last measured against."""
    strengths = bradley_terry(data.matrix()).log_strengths
    found = reliability(data, strengths, gold_right, gold_wrong, **options)
    for _ in range(rounds - 1 if options.get("votes", True) else 0):
        strengths = bradley_terry(weighted(data, found.r).matrix()).log_strengths
        found = reliability(data, strengths, gold_right, gold_wrong, **options)
    return found, strengths


@dataclass(frozen=True)
class TasteCheck:
    """Whether the voters taken for blind (``r`` below one half) answer as a taste of their
    own: ``statistic`` (a likelihood ratio), its ``p`` value, and their pooled order."""

    voters: int
    statistic: float
    p: float
    order: np.ndarray  # the items, their pooled favourite first

    @property
    def taste(self) -> bool:
        return self.p < TASTE_P


TASTE_P = 1e-3  # a taste is reported past this p value: blind voters rarely reach it


def taste_check(data: PairCounts, r: np.ndarray, crowd: np.ndarray) -> TasteCheck:
    """The answers of the voters more likely blind than attentive, pooled: blind voters' favour
    no model, so their Bradley-Terry strengths are flat but for chance; attentive voters of
    the crowd's taste among them (a few, of few votes) pull towards the crowd's ``crowd``
    log-strengths. The likelihood ratio of a free fit against the best fit along the crowd's
    direction (a non-negative multiple, flat included), about chi-square with n - 1 degrees
    of freedom when they are blind; a minority of another order exceeds it by far."""
    blind = np.asarray(r) < 0.5
    low = np.flatnonzero(blind)
    keep = blind[data.unit]
    a, b, ab, ba = data.a[keep], data.b[keep], data.ab[keep], data.ba[keep]
    n = data.n_items
    if not ab.sum() + ba.sum():
        return TasteCheck(len(low), 0.0, 1.0, np.arange(n))

    def loglik(s):
        return float((ab * log_expit(s[a] - s[b]) + ba * log_expit(s[b] - s[a])).sum())

    # (imported here: scipy.optimize is a tenth of `arena rank`'s start, and only weights
    # need it)
    from scipy.optimize import minimize_scalar

    free = bradley_terry(data.matrix(blind.astype(float))).log_strengths
    direction = np.asarray(crowd, dtype=float) - np.mean(crowd)
    along = minimize_scalar(lambda k: -loglik(k * direction), bounds=(0.0, 10.0),
                            method="bounded")
    statistic = max(0.0, 2 * (loglik(free) - loglik(along.x * direction)))
    return TasteCheck(len(low), statistic, float(chdtrc(n - 1, statistic)),
                      np.argsort(-free, kind="stable"))
