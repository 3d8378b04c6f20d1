"""The fewest votes any allocation could need, against balanced: a floor for active matchmaking.

    .venv/bin/python benchmarks/allocation_floor.py [--models 4,12,30] [--level 0.95]

``benchmarks/allocation.py`` stops a campaign once each of the top three models is surely
ahead of every model below it (the leaderboard's simultaneous rank sets) and Kendall's tau
is at least 0.95. Take the first condition alone, in expectation, with the true strengths
of that simulator (normal quantiles, sd 0.45 log units): a Bradley-Terry vote on models i
and j carries p(1 - p) of information about their difference (p their win probability), so
for a share w_ij of the votes on each pair, the variance of a difference is c' I(w)^-1 c / N
after N votes, and the condition holds once N >= max over the required differences of
crit^2 c' I(w)^-1 c / gap^2 (crit: the simultaneous multiplier over every pair, drawn from
the normal approximation as the rank sets are, for the balanced design, and held for the
other). The tau condition is taken in expectation too: the expected number of discordant
pairs (each the normal's chance of its difference coming out reversed) at most 2.5% of the
pairs. Balanced spreads w evenly; the best design minimises N over every w (a smooth
maximum of the conditions over the simplex). Their ratio is what no allocation fixed in
advance beats in expectation. A campaign stops at the first check where its estimates look
separated, so single runs scatter around it either way; and an adaptive one can stop
sooner by leaving alone a pair whose gap came out large by chance, which is also why its
intervals cover less (docs/measured.md, Interval coverage).
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logsumexp
from scipy.stats import norm

TOP = 3


def strengths(n: int) -> np.ndarray:
    """As benchmarks/allocation.py: best first, normal quantiles, sd 0.45 log units."""
    return 0.45 * norm.ppf((n - np.arange(n) - 0.5) / n)


def pairs_of(n: int) -> np.ndarray:
    return np.array([(i, j) for i in range(n) for j in range(i + 1, n)])


def information(theta: np.ndarray, pairs: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Fisher information per vote of the log-strengths but the last (its reference)."""
    n = len(theta)
    p = expit(theta[pairs[:, 0]] - theta[pairs[:, 1]])
    info = np.zeros((n, n))
    weight = share * p * (1 - p)
    np.add.at(info, (pairs[:, 0], pairs[:, 0]), weight)
    np.add.at(info, (pairs[:, 1], pairs[:, 1]), weight)
    np.add.at(info, (pairs[:, 0], pairs[:, 1]), -weight)
    np.add.at(info, (pairs[:, 1], pairs[:, 0]), -weight)
    return info[:-1, :-1]


def contrasts(n: int, rows: np.ndarray) -> np.ndarray:
    c = np.zeros((len(rows), n))
    c[np.arange(len(rows)), rows[:, 0]] = 1
    c[np.arange(len(rows)), rows[:, 1]] = -1
    return c[:, :-1]


def variances(theta, pairs, share, c) -> np.ndarray:
    cov = np.linalg.inv(information(theta, pairs, share))
    return np.einsum("ki,ij,kj->k", c, cov, c)


def critical(theta, pairs, share, level: float, rng, draws: int = 20_000) -> float:
    """The simultaneous multiplier over every pair's difference, as the rank sets draw it."""
    cov = np.linalg.inv(information(theta, pairs, share))
    c = contrasts(len(theta), pairs)
    z = rng.multivariate_normal(np.zeros(len(theta) - 1), cov, size=draws) @ c.T
    return float(np.quantile(np.max(np.abs(z) / np.sqrt(np.einsum(
        "ki,ij,kj->k", c, cov, c)), axis=1), level))


def votes_needed(theta, pairs, share, required, crit) -> float:
    """Votes until the required differences are sure, and the expected Kendall's tau of
    the estimated order is at least 0.95 (each pair discordant with the normal's chance)."""
    return float(np.exp(_log_needed(theta, pairs, share, required, crit, np.inf)))


def _log_needed(theta, pairs, share, required, crit, sharpness) -> float:
    """log votes needed (a smooth maximum over the conditions unless ``sharpness`` is inf)."""
    gaps = theta[required[:, 0]] - theta[required[:, 1]]
    v = variances(theta, pairs, share, contrasts(len(theta), pairs))
    index = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    rows = [index[(int(i), int(j))] for i, j in required]
    logs = np.log(crit ** 2 * v[rows] / gaps ** 2)
    # tau >= 0.95: expected discordant pairs at most 2.5% of them, solved for log N
    gap_all = np.abs(theta[pairs[:, 0]] - theta[pairs[:, 1]])
    allowed = 0.025 * len(pairs)
    low, high = -5.0, 25.0
    for _ in range(60):
        mid = (low + high) / 2
        if norm.sf(gap_all / np.sqrt(v / np.exp(mid))).sum() > allowed:
            low = mid
        else:
            high = mid
    logs = np.append(logs, high)
    return float(logs.max() if np.isinf(sharpness) else logsumexp(sharpness * logs) / sharpness)


def best_share(theta, pairs, required, crit) -> np.ndarray:
    """The design that needs the fewest votes (crit held fixed): a smooth maximum of the
    conditions' votes, minimised over the simplex (softmax)."""
    def cost(u):
        return _log_needed(theta, pairs, np.exp(u - logsumexp(u)), required, crit, 200)

    u = np.zeros(len(pairs))
    for _ in range(3):  # (restarts from the last optimum: the smooth maximum is flat)
        u = minimize(cost, u, method="L-BFGS-B").x
    return np.exp(u - logsumexp(u))


def floor(n: int, level: float, rng) -> dict:
    theta, pairs = strengths(n), pairs_of(n)
    required = np.array([(k, j) for k in range(min(TOP, n - 1)) for j in range(k + 1, n)])
    even = np.full(len(pairs), 1 / len(pairs))
    crit = critical(theta, pairs, even, level, rng)
    best = best_share(theta, pairs, required, crit)
    balanced = votes_needed(theta, pairs, even, required, crit)
    active = votes_needed(theta, pairs, best, required, crit)
    top = np.argsort(-best)[:5]
    return {"balanced": balanced, "best": active, "ratio": active / balanced,
            "busiest": [(int(pairs[k, 0]) + 1, int(pairs[k, 1]) + 1, float(best[k]))
                        for k in top]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="4,12,30")
    parser.add_argument("--level", type=float, default=0.95)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("votes for the top three surely ahead of every model below and an expected tau of "
          "0.95 (Bradley-Terry, expected information, no gold, no bad voters)")
    print(f"{'models':>6} {'balanced':>10} {'best design':>12} {'ratio':>6}  busiest pairs "
          "(share of votes)")
    for n in (int(m) for m in args.models.split(",")):
        f = floor(n, args.level, rng)
        busiest = ", ".join(f"{i}-{j} {s:.0%}" for i, j, s in f["busiest"])
        print(f"{n:>6} {f['balanced']:>10,.0f} {f['best']:>12,.0f} {f['ratio']:>6.2f}  {busiest}")


if __name__ == "__main__":
    main()
