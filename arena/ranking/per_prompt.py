"""A ranking per prompt: which model is best for this prompt, shrunk toward the overall fit.

Each prompt's own votes are too few for a fit of their own (a handful per pair, often none):
a per-prompt Bradley-Terry fit swings with every vote and diverges where one model won all
its games. Here each prompt's strengths are the overall fit's plus a prompt effect, the
effects drawn from a normal of spread ``tau`` per model (a random-effects model over the
prompts), estimated by empirical Bayes:

* at the overall fit, prompt p's votes have a score ``s_p`` (what they pull each strength by)
  and an information ``H_p``; one Newton step gives the prompt's own deviation, ``H_p^+ s_p``,
  whose variance given the effect is about ``H_p^+``;
* ``tau^2`` by the method of moments over the prompts: ``E[s_p' H_p^+ s_p]`` is
  ``tau^2 tr(H_p) + rank(H_p)``;
* the effect's posterior, with the prior ``N(0, tau^2)`` on the centred strengths: mean
  ``(H_p + I / tau^2)^+ s_p``, covariance ``(H_p + I / tau^2)^+``, the overall fit's own
  covariance (``H^+``) added to each prompt's.

A prompt with few votes stays near the overall order; one whose votes disagree with it
strongly and often moves. Intervals are the normal's at ``level`` of that posterior
(``tau``'s own uncertainty is not carried: with few prompts they cover a little less).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtri

from arena.ranking.bradley_terry import ELO_SCALE, LOG10, bradley_terry
from arena.ranking.pairs import PairCounts


@dataclass(frozen=True)
class PromptStrengths:
    """Per prompt (``prompts``: the data's unit labels) and model: the shrunk centred
    log-strengths, their posterior standard deviations and the ``level`` intervals on the Elo
    scale (mean 1000 per prompt); ``raw`` the prompt's own one-step strengths, unshrunk;
    ``votes`` per prompt; ``tau`` the spread of the prompt effects per model (log units)."""

    prompts: np.ndarray
    log_strengths: np.ndarray
    std: np.ndarray
    rating_low: np.ndarray
    rating_high: np.ndarray
    raw: np.ndarray
    votes: np.ndarray
    tau: float
    level: float
    overall: np.ndarray  # the strengths every prompt's are shrunk toward (centred)

    @property
    def ratings(self) -> np.ndarray:
        return ELO_SCALE * self.log_strengths / LOG10 + 1000.0


def per_prompt(data: PairCounts, level: float = 0.95, rounds: int = 10,
               rng: np.random.Generator | None = None) -> PromptStrengths:
    """Each unit of ``data`` (one-way counts whose units are prompts) ranked by empirical
    Bayes, as the module says; ``rounds`` parametric-bootstrap refits correct tau's bias.
    Raises ValueError for a level outside (0, 1) or data with fewer than two items or two
    prompts."""
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    n, units = data.n_items, data.n_units
    if n < 2 or units < 2:
        raise ValueError("a ranking per prompt needs two models and two prompts")
    rng = rng if rng is not None else np.random.default_rng(0)
    centre = np.eye(n) - 1.0 / n
    games = data.ab + data.ba + data.tie
    won = data.ab + 0.5 * data.tie
    theta, effect, tau2 = _fit(data, won, games)
    # the normal approximation's tau is too small where each prompt has few votes (the
    # mode's curvature stands in for the likelihood's spread): studies drawn from the fit,
    # on the same pairs and prompts, say by how much, and tau is scaled up by it
    found = []
    for _ in range(rounds):
        drawn = np.sqrt(tau2) * rng.normal(0, 1, (units, n)) @ centre
        truth = theta + drawn
        chance = expit(truth[data.unit, data.a] - truth[data.unit, data.b])
        wins = rng.binomial(games.astype(np.int64), chance).astype(float)
        found.append(_fit(data, wins, games, tol=1e-4)[2])
    if rounds and np.mean(found) > 0:
        tau2 *= float(np.clip(tau2 / np.mean(found), 1.0, 4.0))
        theta, effect, _ = _fit(data, won, games, tau2, theta, effect)
    score, h = _parts(data, theta[None, :] + effect, won, games)
    own = np.linalg.pinv(h, hermitian=True)
    raw = theta + effect + np.einsum("uij,uj->ui", centre @ own @ centre, score)
    posterior = centre @ np.linalg.pinv(h + centre / tau2, hermitian=True) @ centre
    overall = centre @ np.linalg.pinv(h.sum(axis=0), hermitian=True) @ centre
    strengths = theta + effect
    std = np.sqrt(np.clip(np.diagonal(posterior, axis1=1, axis2=2) + np.diag(overall), 0, None))
    half = ELO_SCALE * float(ndtri(0.5 + level / 2)) * std / LOG10
    ratings = ELO_SCALE * strengths / LOG10 + 1000.0
    return PromptStrengths(
        prompts=np.arange(units), log_strengths=strengths, std=std,
        rating_low=ratings - half, rating_high=ratings + half,
        raw=raw - raw.mean(axis=1, keepdims=True),
        votes=np.bincount(data.unit, weights=games, minlength=units), tau=float(np.sqrt(tau2)),
        level=level, overall=theta - theta.mean())


def _fit(data: PairCounts, won, games, tau2: float | None = None, theta=None, effect=None,
         max_iter: int = 500, tol: float = 1e-7):
    """(theta, effects, tau^2): the effects' posterior modes given tau^2 and theta (a
    Newton step each), theta given them, then tau^2 from the effects' posterior (EM under
    the normal approximation), in turn; ``tau2`` given: held at it."""
    n, units = data.n_items, data.n_units
    centre = np.eye(n) - 1.0 / n
    if theta is None:
        theta = bradley_terry(_matrix(data, won, games)).log_strengths
        effect = np.zeros((units, n))
    fixed = tau2 is not None
    if not fixed:  # (to start from: the method of moments at the overall fit)
        score, h = _parts(data, theta[None, :] + effect, won, games)
        statistic = np.einsum("ui,uij,uj->u", score, np.linalg.pinv(h, hermitian=True), score)
        spread = np.trace(h, axis1=1, axis2=2).sum()
        ranks = np.linalg.matrix_rank(h, hermitian=True)
        tau2 = max(float((statistic - ranks).sum() / spread), 1e-4) if spread else 1e-4
    for _ in range(max_iter):
        score, h = _parts(data, theta[None, :] + effect, won, games)
        posterior = centre @ np.linalg.pinv(h + centre / tau2, hermitian=True) @ centre
        step = np.einsum("uij,uj->ui", posterior, score - effect / tau2)
        effect = effect + step
        effect -= effect.mean(axis=1, keepdims=True)
        theta = theta + centre @ np.linalg.pinv(h.sum(axis=0), hermitian=True) \
            @ score.sum(axis=0)
        theta -= theta.mean()
        moved = float(np.abs(step).max())
        if not fixed:
            updated = max(float(((effect ** 2).sum()
                                 + np.trace(posterior, axis1=1, axis2=2).sum())
                                / (units * (n - 1))), 1e-6)
            moved = max(moved, abs(updated - tau2))
            tau2 = updated
        if moved < tol:
            break
    return theta, effect, tau2


def _matrix(data: PairCounts, won, games) -> np.ndarray:
    wins = np.zeros((data.n_items, data.n_items))
    np.add.at(wins, (data.a, data.b), won)
    np.add.at(wins, (data.b, data.a), games - won)
    return wins


def _parts(data: PairCounts, strengths: np.ndarray, won, games):
    """Per prompt, the votes' score and information at ``strengths`` (prompts x items)."""
    n, units = data.n_items, data.n_units
    p = expit(strengths[data.unit, data.a] - strengths[data.unit, data.b])
    residual = won - games * p  # toward a
    info = games * p * (1 - p)
    score = np.zeros((units, n))
    np.add.at(score, (data.unit, data.a), residual)
    np.add.at(score, (data.unit, data.b), -residual)
    h = np.zeros((units, n, n))
    for (i, j), sign in (((data.a, data.a), 1), ((data.b, data.b), 1),
                         ((data.a, data.b), -1), ((data.b, data.a), -1)):
        np.add.at(h, (data.unit, i, j), sign * info)
    return score, h
