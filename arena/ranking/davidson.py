"""Davidson's (1970) tie model, an alternative to counting a tie as half a win.

P(i beats j) = p_i / D, P(tie) = nu sqrt(p_i p_j) / D, D = p_i + p_j + nu sqrt(p_i p_j).
Counting ties as half wins (the arena-compatible default of :func:`bradley_terry`) pulls
strengths together when ties are common; this model separates "how often ties happen" (nu)
from "who is stronger" and recovers the strengths. Fitted by maximum likelihood (L-BFGS with
the analytic gradient) over the centred log-strengths and log nu.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from arena.ranking.bradley_terry import (
    ELO_CENTER,
    ELO_SCALE,
    LOG10,
    _check_wins,
    is_strongly_connected,
)
from arena.ranking.elo import nearest_psd
from arena.ranking.sandwich import t_widening


@dataclass(frozen=True)
class DavidsonResult:
    scores: np.ndarray  # sum 100
    log_strengths: np.ndarray  # centred
    ratings: np.ndarray  # Elo scale, mean 1000
    nu: float  # tie propensity: P(tie) between equals = nu / (2 + nu)
    converged: bool
    iterations: int


def split_outcomes(winners, losers, n_items: int, ties) -> tuple[np.ndarray, np.ndarray]:
    """(strict wins, tie counts) from per-game outcomes; ``ties[k]`` marks a draw."""
    winners = np.asarray(winners, dtype=np.int64)
    losers = np.asarray(losers, dtype=np.int64)
    ties = np.asarray(ties, dtype=bool)
    strict = np.bincount(winners[~ties] * n_items + losers[~ties], minlength=n_items**2)
    drawn = np.bincount(winners[ties] * n_items + losers[ties], minlength=n_items**2)
    drawn = drawn.reshape(n_items, n_items)
    return strict.reshape(n_items, n_items).astype(float), (drawn + drawn.T).astype(float)


def davidson(wins, ties, *, tol: float = 1e-10, max_iter: int = 10_000) -> DavidsonResult:
    """Fit Davidson's model to strict win counts and symmetric tie counts.

    Raises
    ------
    ValueError
        If the matrices are invalid, ``ties`` is not symmetric, or the comparison graph of
        decisive results is not strongly connected (the strengths would diverge).
    """
    wins = _check_wins(wins)
    ties = _check_wins(ties)
    if wins.shape != ties.shape or not np.allclose(ties, ties.T):
        raise ValueError("ties must be a symmetric matrix of the same shape as wins")
    if not is_strongly_connected(wins):
        raise ValueError("decisive results are not strongly connected: no Davidson fit exists")
    n = wins.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    decisive = wins + wins.T

    def objective(x):
        theta = x[:n] - x[:n].mean()
        log_nu = x[n]
        nu = np.exp(log_nu)
        a = np.exp(theta)
        s = np.sqrt(np.outer(a, a))
        d = a[:, None] + a[None, :] + nu * s
        log_d = np.log(d)
        half = 0.5 * (theta[:, None] + theta[None, :])
        nll = -(wins * (theta[:, None] - log_d)).sum()
        nll -= (ties * upper * (log_nu + half - log_d)).sum()
        # gradient: d log D_ij / d theta_i = (a_i + nu s_ij / 2) / D_ij
        dlog = (a[:, None] + 0.5 * nu * s) / d
        np.fill_diagonal(dlog, 0.0)
        grad_theta = -wins.sum(axis=1) + (decisive * dlog).sum(axis=1) \
            - 0.5 * ties.sum(axis=1) + (ties * dlog).sum(axis=1)
        grad_theta -= grad_theta.mean()
        share = nu * s / d
        grad_nu = ((decisive * upper) * share).sum() - (ties * upper * (1.0 - share)).sum()
        return nll, np.append(grad_theta, grad_nu)

    x0 = np.zeros(n + 1)
    x0[n] = np.log(max(ties.sum() / 2, 0.5) / max(decisive.sum() / 2, 1.0))
    result = minimize(objective, x0, jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15})
    theta = result.x[:n] - result.x[:n].mean()
    p = np.exp(theta)
    ratings = ELO_SCALE * theta / LOG10
    return DavidsonResult(
        scores=100 * p / p.sum(),
        log_strengths=theta,
        ratings=ratings - ratings.mean() + ELO_CENTER,
        nu=float(np.exp(result.x[n])),
        converged=bool(result.success),
        iterations=int(result.nit),
    )


@dataclass(frozen=True)
class DavidsonIntervals:
    """Percentile intervals (Elo scale) from bootstrap refits; ``samples`` are the rounds'
    centred log-strengths, ``failed`` the rounds whose decisive results admitted no fit."""

    low: np.ndarray
    high: np.ndarray
    samples: np.ndarray
    failed: int


def davidson_bootstrap(data, *, rounds: int = 1000, resample: str = "unit",
                       rng: np.random.Generator | None = None,
                       level: float = 0.95) -> DavidsonIntervals:
    """Resample ``data`` (a :class:`~arena.ranking.pairs.PairCounts`) by unit (voters, with
    all their votes) or by vote -- ties drawn as ties -- with Rao and Wu's rescaling, and
    refit Davidson's model each round. Data clustered two ways (voter and prompt) is
    resampled by voter, by prompt and by vote, ``rounds`` refits each: the covariance of the
    voters' rounds plus what the prompts' add over the votes' (Cameron, Gelbach and Miller;
    clipped at none), widened as Student's t with the fewer effective units of the two ways
    widens the normal (as the instant intervals are), and ``samples`` drawn from the normal
    of that covariance about the fit.

    Raises
    ------
    ValueError
        rounds < 2, a level outside (0, 1) or an unknown resampling.
    """
    if rounds < 2 or not 0 < level < 1 or resample not in ("unit", "vote"):
        raise ValueError("rounds must be >= 2, level in (0, 1), resample unit or vote")
    rng = rng if rng is not None else np.random.default_rng()
    if resample == "unit" and data.ways is not None:
        return _two_way(data, rounds, rng, level)
    if resample == "vote" or data.n_units < 2:
        data = data.collapsed()
        draw = _vote_draws(data, rng)
    else:
        draw = _unit_draws(data, rng)
    samples, failed = _refits(data, draw, rounds)
    return _percentiles(samples, failed, level)


def _matrices(data, ab, ba, tie) -> tuple[np.ndarray, np.ndarray]:
    n = data.n_items
    wins = np.zeros((n, n))
    ties = np.zeros((n, n))
    np.add.at(wins, (data.a, data.b), ab)
    np.add.at(wins, (data.b, data.a), ba)
    np.add.at(ties, (data.a, data.b), tie)
    return wins, ties + ties.T


def _refits(data, draw, rounds: int) -> tuple[np.ndarray, int]:
    samples, failed = [], 0
    for _ in range(rounds):
        try:
            samples.append(davidson(*_matrices(data, *draw())).log_strengths)
        except ValueError:
            failed += 1
    if len(samples) < 2:
        raise ValueError("too few bootstrap rounds admitted a Davidson fit")
    return np.asarray(samples), failed


def _two_way(data, rounds: int, rng, level: float) -> DavidsonIntervals:
    voters, prompts = data.way(0), data.way(1)
    votes = data.collapsed()
    parts, failed = [], 0
    for part, draw in ((voters, _unit_draws(voters, rng)), (prompts, _unit_draws(prompts, rng)),
                       (votes, _vote_draws(votes, rng))):
        samples, lost = _refits(part, draw, rounds)
        parts.append(np.cov(samples.T))
        failed += lost
    covariance = parts[0] + nearest_psd(parts[1] - parts[2])
    covariance = covariance * t_widening(data.effective_units(), level)
    point = davidson(*_matrices(data, data.ab, data.ba, data.tie)).log_strengths
    samples = rng.multivariate_normal(point, nearest_psd(covariance), size=rounds,
                                      method="eigh")
    return _percentiles(samples, failed, level)


def _percentiles(samples: np.ndarray, failed: int, level: float) -> DavidsonIntervals:
    ratings = ELO_SCALE * samples / LOG10
    ratings = ratings - ratings.mean(axis=1, keepdims=True) + ELO_CENTER
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(ratings, [tail, 100.0 - tail], axis=0)
    return DavidsonIntervals(low, high, samples, failed)


def _unit_draws(data, rng):
    units = data.n_units
    scale = units / (units - 1)

    def draw():
        picks = rng.multinomial(units - 1, np.full(units, 1.0 / units)) * scale
        w = picks[data.unit]
        return w * data.ab, w * data.ba, w * data.tie

    return draw


def _vote_draws(data, rng):
    counts = np.concatenate([data.ab, data.ba, data.tie])
    total = round(float(counts.sum()))
    probs = counts / counts.sum()
    scale = total / (total - 1) if total > 1 else 1.0
    k = data.a.size

    def draw():
        c = rng.multinomial(max(total - 1, 1), probs) * scale
        return c[:k], c[k:2 * k], c[2 * k:]

    return draw


@dataclass(frozen=True)
class DavidsonRanking:
    """Davidson's fit of ``data`` with its bootstrap (None without rounds) and rank sets,
    and per item its ``played`` votes and ``won`` (a tie half); ``wins`` and ``ties`` the
    matrices fitted."""

    fit: DavidsonResult
    intervals: DavidsonIntervals | None
    ranks: object
    wins: np.ndarray
    ties: np.ndarray
    played: np.ndarray
    won: np.ndarray


def davidson_ranking(data, n_items: int, *, rounds: int = 1000, resample: str = "unit",
                     rng: np.random.Generator | None = None,
                     level: float = 0.95) -> DavidsonRanking:
    """Davidson's model fitted to ``data`` (:class:`~arena.ranking.pairs.PairCounts` of
    ``n_items``), with ``level`` intervals from ``rounds`` bootstrap refits resampling
    ``resample`` ("unit" or "vote"), ties drawn as ties, and simultaneous rank sets.

    Raises
    ------
    ValueError
        When the decisive results admit no fit.
    """
    from arena.ranking import ranks

    wins = np.zeros((n_items, n_items))
    ties = np.zeros((n_items, n_items))
    np.add.at(wins, (data.a, data.b), data.ab)
    np.add.at(wins, (data.b, data.a), data.ba)
    np.add.at(ties, (data.a, data.b), data.tie)
    ties = ties + ties.T
    fit = davidson(wins, ties)
    boot = davidson_bootstrap(data, rounds=rounds, rng=rng, level=level,
                              resample=resample) if rounds > 0 else None
    return DavidsonRanking(
        fit=fit, intervals=boot,
        ranks=ranks.from_samples(fit.log_strengths, boot.samples, level) if boot else None,
        wins=wins, ties=ties, played=(wins + wins.T + ties).sum(axis=1),
        won=wins.sum(axis=1) + ties.sum(axis=1) / 2)
