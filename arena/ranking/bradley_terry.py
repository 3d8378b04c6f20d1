"""Batch Bradley-Terry rankings on aggregated win counts.

Model: P(i beats j) = p_i / (p_i + p_j). Fitted with the iteration of Newman (2023, JMLR 24,
"Efficient computation of rankings from pairwise comparisons"), with w_ij = times i beat j::

    p_i <- (a + sum_j w_ij p_j / (p_i + p_j)) / (2a / (p_i + 1) + sum_j w_ji / (p_i + p_j))

``a = 0`` is the maximum-likelihood iteration. ``a > 0`` is Newman's MAP variant: each item
gets ``a`` virtual wins and ``a`` virtual losses against a virtual item of strength 1 (a
logistic prior), which keeps every strength finite when the data alone has no answer.

Choices made here, each covered by a test:

* All items update at once (vectorised, O(n^2) per sweep). On a bipartite comparison graph
  (two items; a newcomer compared only with anchors) that synchronous form flips around the
  answer forever; when the step stops shrinking the update is damped in log space (the mean of
  the old and new log-strength), which has the same fixed point and converges.
* Convergence is judged on the change of the *centred* log-strengths, not of p (Zermelo's MM
  "converges" at 1e-8 while still 1e-5 off; stopping on log-strength changes is stricter).
* When the comparison graph is not strongly connected (some item never wins or never loses,
  or one group always beats another) no maximum-likelihood answer exists. ``prior=None``
  (the default) then applies the prior with ``a = 1`` and says so in ``flags``; with a
  strongly connected graph it uses ``a = 0`` (pure maximum likelihood).
* Scores are reported normalised to sum 100 and on the Elo scale, 400 log10 p shifted so the
  mean rating is 1000; nothing is anchored to one item.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.csgraph import connected_components

ELO_SCALE = 400.0
ELO_CENTER = 1000.0
DEFAULT_PRIOR = 1.0
LOG10 = np.log(10.0)


@dataclass(frozen=True)
class BTResult:
    """Outcome of one fit.

    Attributes
    ----------
    scores : strengths normalised to sum 100.
    log_strengths : natural-log strengths, centred to mean 0.
    ratings : Elo scale, ``400 * log10(p)`` with mean 1000.
    iterations, converged : what the iteration did.
    prior : the prior weight ``a`` used (0 for maximum likelihood).
    strongly_connected : whether the comparison graph is strongly connected.
    flags : human-readable warnings for the analyst (data sufficiency).
    """

    scores: np.ndarray
    log_strengths: np.ndarray
    ratings: np.ndarray
    iterations: int
    converged: bool
    prior: float
    strongly_connected: bool
    flags: tuple[str, ...] = field(default_factory=tuple)


def aggregate(winners, losers, n_items: int, ties=None) -> np.ndarray:
    """Win-count matrix from per-comparison outcomes, in one ``bincount`` pass.

    Parameters
    ----------
    winners, losers : array-like of int
        Item indices; for a tie the order does not matter.
    n_items : int
    ties : array-like of bool, optional
        A tie adds 0.5 to both ``wins[a, b]`` and ``wins[b, a]``.

    Returns
    -------
    wins : ndarray of shape (n_items, n_items), float

    Raises
    ------
    ValueError
        On mismatched lengths, indices out of range or self-comparisons.
    """
    winners = np.asarray(winners, dtype=np.int64)
    losers = np.asarray(losers, dtype=np.int64)
    if winners.shape != losers.shape or winners.ndim != 1:
        raise ValueError("winners and losers must be 1-d arrays of the same length")
    if winners.size and (
        min(winners.min(), losers.min()) < 0 or max(winners.max(), losers.max()) >= n_items
    ):
        raise ValueError(f"item index out of range for {n_items} items")
    if np.any(winners == losers):
        raise ValueError("an item cannot be compared with itself")
    cells = np.bincount(winners * n_items + losers, minlength=n_items**2).astype(float)
    if ties is not None:
        ties = np.asarray(ties, dtype=bool)
        if ties.shape != winners.shape:
            raise ValueError("ties must have the same length as winners")
        if ties.any():
            tied = np.bincount(winners[ties] * n_items + losers[ties], minlength=n_items**2)
            tied = tied.reshape(n_items, n_items)
            # a tie counted above as a full win becomes half a win each way
            cells -= 0.5 * tied.ravel()
            cells += 0.5 * tied.T.ravel()
    return cells.reshape(n_items, n_items)


def _check_wins(wins) -> np.ndarray:
    wins = np.asarray(wins, dtype=float)
    if wins.ndim != 2 or wins.shape[0] != wins.shape[1]:
        raise ValueError("wins must be a square matrix")
    if not np.all(np.isfinite(wins)) or np.any(wins < 0):
        raise ValueError("wins must be finite and non-negative")
    if np.any(np.diag(wins) != 0):
        raise ValueError("the diagonal of wins must be zero")
    return wins


def is_strongly_connected(wins: np.ndarray) -> bool:
    """True when every item can reach every other through "beat" edges (ML answer exists)."""
    if wins.shape[0] <= 1:
        return True
    n, _ = connected_components(wins > 0, directed=True, connection="strong")
    return n == 1


def _data_flags(wins: np.ndarray) -> list[str]:
    flags = []
    played = (wins + wins.T).sum(axis=1)
    never_won = np.flatnonzero((wins.sum(axis=1) == 0) & (played > 0))
    never_lost = np.flatnonzero((wins.sum(axis=0) == 0) & (played > 0))
    unplayed = np.flatnonzero(played == 0)
    if unplayed.size:
        flags.append(f"items without any comparison: {unplayed.tolist()}")
    if never_won.size:
        flags.append(f"items that never won: {never_won.tolist()}")
    if never_lost.size:
        flags.append(f"items that never lost: {never_lost.tolist()}")
    n_weak, _ = connected_components(wins + wins.T > 0, directed=False)
    if n_weak > 1:
        flags.append(f"comparison graph falls into {n_weak} disconnected groups")
    elif not is_strongly_connected(wins) and not (never_won.size or never_lost.size):
        flags.append("one group of items always beats another")
    return flags


def _iterate(wins: np.ndarray, log_p0: np.ndarray, prior: float, tol: float, max_iter: int):
    """Newman's iteration on a batch: ``wins`` (..., n, n), ``log_p0`` (..., n).

    Without a prior the likelihood does not see a common shift of the log-strengths, so
    they are re-centred every sweep. With one (a > 0) the virtual item of strength 1 fixes
    the scale and the posterior mode is a point, not a line: re-centring would move away
    from it, so those rows are centred only once converged, for reporting.

    Returns centred log-strengths, iterations and whether every item of the batch converged.
    """
    free = np.asarray(prior) == 0  # scalar, or one flag per batch member shaped (..., 1)
    log_p = np.where(free, log_p0 - log_p0.mean(axis=-1, keepdims=True), log_p0)
    damped = False
    previous_step = np.inf
    for iteration in range(1, max_iter + 1):
        p = np.exp(log_p)
        # m_ij = w_ij / (p_i + p_j); the denominator sum_j w_ji / (p_i + p_j) is then the
        # column sum of m, because p_i + p_j is symmetric.
        m = wins / (p[..., :, None] + p[..., None, :])
        num = (m @ p[..., :, None])[..., 0] + prior
        den = m.sum(axis=-2) + 2.0 * prior / (p + 1.0)
        # prior may be a scalar or one weight per batch member, shaped (..., 1)
        with np.errstate(divide="ignore"):
            new = np.log(num) - np.log(den)
        if damped:
            new = 0.5 * (new + log_p)
        new = np.where(free, new - new.mean(axis=-1, keepdims=True), new)
        step = float(np.max(np.abs(new - log_p))) if new.size else 0.0
        log_p = new
        if step < tol:
            return log_p - log_p.mean(axis=-1, keepdims=True), iteration, True
        if not damped and iteration > 2 and step > 0.95 * previous_step:
            damped = True  # oscillation (bipartite graph): halve the step in log space
        previous_step = step
    return log_p - log_p.mean(axis=-1, keepdims=True), max_iter, False


def _result(log_p, iterations, converged, prior, connected, flags) -> BTResult:
    p = np.exp(log_p)
    ratings = ELO_SCALE * log_p / LOG10
    if log_p.size:
        ratings = ratings - ratings.mean() + ELO_CENTER
        p = 100.0 * p / p.sum()
    return BTResult(
        scores=p,
        log_strengths=log_p,
        ratings=ratings,
        iterations=iterations,
        converged=converged,
        prior=prior,
        strongly_connected=connected,
        flags=tuple(flags),
    )


def bradley_terry(
    wins, *, tol: float = 1e-10, max_iter: int = 10_000, prior: float | None = None
) -> BTResult:
    """Fit Bradley-Terry strengths to a win-count matrix.

    Parameters
    ----------
    wins : array-like of shape (n, n)
        ``wins[i, j]`` = times i beat j; floats allowed (a tie adds 0.5 to both cells).
    tol : float
        Stop when no centred log-strength moves more than this in one sweep.
    max_iter : int
    prior : float, optional
        Weight ``a`` of the logistic prior. None: 0 when the graph is strongly connected,
        else ``DEFAULT_PRIOR`` (1), flagged.

    Returns
    -------
    BTResult
        ``converged`` is False (never an exception or a hang) if ``max_iter`` ran out.

    Raises
    ------
    ValueError
        If ``wins`` is not a square, finite, non-negative matrix with a zero diagonal, or
        ``prior`` is negative.
    """
    wins = _check_wins(wins)
    n = wins.shape[0]
    connected = is_strongly_connected(wins)
    flags = [] if connected else _data_flags(wins)
    if prior is None:
        prior = 0.0 if connected else DEFAULT_PRIOR
        if not connected:
            flags.append(
                f"no maximum-likelihood ranking exists; a weak prior (a={prior:g}) keeps "
                "the scores finite, treat them as provisional"
            )
    elif prior < 0:
        raise ValueError("prior must be >= 0")
    elif prior == 0 and not connected:
        prior = DEFAULT_PRIOR
        flags.append(
            f"prior=0 asked for, but no maximum-likelihood ranking exists; used a={prior:g}"
        )
    if n <= 1:
        return _result(np.zeros(n), 0, True, prior, True, flags)
    log_p, iterations, converged = _iterate(wins, np.zeros(n), prior, tol, max_iter)
    if not converged:
        flags.append(f"did not converge within {max_iter} iterations")
    return _result(log_p, iterations, converged, prior, connected, flags)
