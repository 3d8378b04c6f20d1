"""HYPE (Zhou et al. 2019): staircase rules and scores, as pure functions.

HYPE-infinity: each evaluator judges real and fake images without a time limit; the score is
the share of wrong answers (the deception rate), with the fakes error (fakes judged real) and
the reals error (reals judged fake). Its interval is a two-way bootstrap: evaluators and
images are both samples (another study would have other people and other images), so both
are resampled (Owen's pigeonhole bootstrap); resampling evaluators alone covered 91-93%.
The spread between evaluators is reported beside it.

HYPE-time: an adaptive staircase sets the exposure; an evaluator's threshold is the exposure
at which they would be right 75% of the time, from a maximum-likelihood psychometric fit
(accuracy against log exposure: a guess rate of 1/2, a lapse rate, a logistic), leaving out
each block's approach to the threshold (the trials before its first reversal); a model's
score is the mean over its evaluators, with a bootstrap interval over evaluators. The
paper's figure (the mean over blocks of the block's modal exposure, approach included) is
kept beside it for comparability: it was biased +6.5% at a true 150 ms threshold and -6.2%
at 700 ms; the fit is within 2% (benchmarks/coverage.py).

The paper's staircase is "+10 ms after errors, -30 ms after correct ... 3-up/1-down, 75%
threshold". Read literally (30 ms faster after three correct in a row, 10 ms slower after
an error) it settles where 4p^3 = 1, p = 63%. The weighted up/down rule (10 ms faster after
each correct answer, 30 ms slower after each error) settles where 10p = 30(1 - p), p = 75%,
the threshold the paper names; it is the default. Both are objects with the same interface,
and tests/unit/test_hype.py simulates each to show where it converges.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class StaircaseState:
    exposure_ms: float
    streak: int = 0  # consecutive correct answers (used by the literal rule)


@dataclass(frozen=True)
class WeightedUpDown:
    """Each correct answer shortens the exposure by ``down_ms``, each error lengthens it by
    ``up_ms``; converges where p * down = (1 - p) * up, i.e. p = up / (up + down) = 75%."""

    down_ms: float = 10.0
    up_ms: float = 30.0
    start_ms: float = 500.0
    min_ms: float = 100.0
    max_ms: float = 1000.0
    name: str = "weighted"

    def start(self) -> StaircaseState:
        return StaircaseState(self.start_ms)

    def update(self, state: StaircaseState, correct: bool) -> StaircaseState:
        step = -self.down_ms if correct else self.up_ms
        return StaircaseState(float(np.clip(state.exposure_ms + step, self.min_ms, self.max_ms)))

    @property
    def target_accuracy(self) -> float:
        return self.up_ms / (self.up_ms + self.down_ms)


@dataclass(frozen=True)
class ThreeInARow:
    """The paper's words read literally: ``down_ms`` shorter after ``run`` correct answers in a
    row, ``up_ms`` longer after each error. It converges where p^run = up / (up + down); with
    run 3, down 30 and up 10: 4 p^3 = 1, p = 63%."""

    down_ms: float = 30.0
    up_ms: float = 10.0
    run: int = 3
    start_ms: float = 500.0
    min_ms: float = 100.0
    max_ms: float = 1000.0
    name: str = "three-in-a-row"

    def start(self) -> StaircaseState:
        return StaircaseState(self.start_ms)

    def update(self, state: StaircaseState, correct: bool) -> StaircaseState:
        if not correct:
            return StaircaseState(min(state.exposure_ms + self.up_ms, self.max_ms), 0)
        streak = state.streak + 1
        if streak >= self.run:
            return StaircaseState(max(state.exposure_ms - self.down_ms, self.min_ms), 0)
        return StaircaseState(state.exposure_ms, streak)

    @property
    def target_accuracy(self) -> float:
        # zero drift: down * rate(run completed) = up * rate(error) gives p^run = up/(up+down)
        return (self.up_ms / (self.up_ms + self.down_ms)) ** (1 / self.run)


STAIRCASES = {"weighted": WeightedUpDown, "three-in-a-row": ThreeInARow}


# --- Trials --------------------------------------------------------------------------------


@dataclass
class Trials:
    """Parallel arrays, one entry per trial. ``model`` is "" for real images."""

    evaluator: np.ndarray
    model: np.ndarray
    is_real: np.ndarray
    judged_real: np.ndarray
    exposure_ms: np.ndarray | None = None
    block: np.ndarray | None = None
    image: np.ndarray | None = None  # which image each trial showed (for the two-way bootstrap)

    @property
    def correct(self) -> np.ndarray:
        return self.is_real == self.judged_real


def evaluator_models(trials: Trials) -> dict[str, str]:
    """Each evaluator's model: the model of their fake images.

    Raises
    ------
    ValueError
        If an evaluator saw fakes of several models or no fake at all (their real-image
        answers could not be attributed).
    """
    owners: dict[str, set] = {}
    for evaluator, model, real in zip(trials.evaluator, trials.model, trials.is_real,
                                      strict=True):
        owners.setdefault(evaluator, set())
        if not real:
            owners[evaluator].add(model)
    out = {}
    for evaluator, models in owners.items():
        if len(models) != 1:
            raise ValueError(f"evaluator {evaluator!r} saw fakes of {len(models)} models; "
                             "each HYPE evaluator judges one model")
        out[evaluator] = next(iter(models))
    return out


@dataclass
class ModelScore:
    model: str
    score: float  # deception rate (infinity, %) or mean modal exposure (time, ms)
    fakes_error: float | None
    reals_error: float | None
    std: float
    ci_low: float
    ci_high: float
    evaluators: int
    answers: int
    rank: int = 0
    spread: float | None = None  # standard deviation between evaluators
    paper_score: float | None = None  # HYPE-time: the paper's mode-based figure


@dataclass
class Separability:
    anova_f: float | None = None
    anova_p: float | None = None
    tukey: list[dict] = field(default_factory=list)
    ttest_t: float | None = None
    ttest_p: float | None = None


def _rank(scores: list[ModelScore]) -> list[ModelScore]:
    scores.sort(key=lambda s: -s.score)
    for i, s in enumerate(scores, start=1):
        s.rank = i
    return scores


def two_way_bootstrap(evaluator: np.ndarray, image: np.ndarray | None, wrong: np.ndarray,
                      rounds: int, rng: np.random.Generator,
                      batch: int = 500) -> np.ndarray:
    """Bootstrap of the share of wrong answers over trials crossed by evaluators and images:
    each round draws evaluators and images with replacement and weighs a trial by how often
    both were drawn (Owen 2007). Without images, evaluators alone."""
    e_index = np.unique(evaluator, return_inverse=True)[1].ravel()
    n_e = int(e_index.max()) + 1
    if image is None:
        i_index, n_i = np.zeros(e_index.size, dtype=int), 1
    else:
        i_index = np.unique(image, return_inverse=True)[1].ravel()
        n_i = int(i_index.max()) + 1
    wrong = wrong.astype(float)
    out = np.empty(rounds)
    for start in range(0, rounds, batch):
        size = min(batch, rounds - start)
        w_e = rng.multinomial(n_e, np.full(n_e, 1.0 / n_e), size=size)[:, e_index]
        w_i = (rng.multinomial(n_i, np.full(n_i, 1.0 / n_i), size=size)[:, i_index]
               if n_i > 1 else 1)
        weight = w_e * w_i
        total = weight.sum(axis=1)
        out[start:start + size] = np.where(total > 0, weight @ wrong / np.maximum(total, 1),
                                           np.nan)
    return out[np.isfinite(out)]


def score_infinity(trials: Trials, *, rounds: int = 10_000,
                   rng: np.random.Generator | None = None, level: float = 0.95
                   ) -> tuple[list[ModelScore], dict[str, np.ndarray]]:
    """HYPE-infinity per model: deception rate (% wrong), fakes and reals error (%), a
    two-way bootstrap interval (evaluators x images, evaluators only when the trials do not
    say which image they showed) and the spread between evaluators. Returns the scores, best
    (most deceptive) first, and each model's per-evaluator error rates (for separability
    tests)."""
    rng = rng if rng is not None else np.random.default_rng()
    belongs = evaluator_models(trials)
    wrong = ~trials.correct
    tail = 100 * (1 - level) / 2
    scores, per_evaluator = [], {}
    for model in sorted(set(belongs.values())):
        evaluators = sorted(e for e, m in belongs.items() if m == model)
        mask = np.isin(trials.evaluator, evaluators)
        errors = np.array([wrong[mask & (trials.evaluator == e)].sum() for e in evaluators],
                          float)
        answers = np.array([(mask & (trials.evaluator == e)).sum() for e in evaluators], float)
        images = trials.image[mask] if trials.image is not None else None
        boot = 100 * two_way_bootstrap(trials.evaluator[mask], images, wrong[mask], rounds,
                                       rng)
        fakes = mask & ~trials.is_real
        reals = mask & trials.is_real
        per_evaluator[model] = 100 * errors / answers
        scores.append(ModelScore(
            model=model,
            score=100 * errors.sum() / answers.sum(),
            fakes_error=100 * wrong[fakes].mean() if fakes.any() else None,
            reals_error=100 * wrong[reals].mean() if reals.any() else None,
            std=float(boot.std(ddof=1)),
            ci_low=float(np.percentile(boot, tail)),
            ci_high=float(np.percentile(boot, 100 - tail)),
            evaluators=len(evaluators),
            answers=int(answers.sum()),
            spread=float(per_evaluator[model].std(ddof=1)) if len(evaluators) > 1 else None,
        ))
    return _rank(scores), per_evaluator


def modal_exposure(exposures: np.ndarray, bin_ms: float = 10.0) -> float:
    """The most frequent exposure, after rounding to ``bin_ms`` (the staircase's step);
    ties go to the mean of the tied values."""
    binned = np.round(np.asarray(exposures, float) / bin_ms) * bin_ms
    counts = Counter(binned.tolist())
    top = max(counts.values())
    return float(np.mean([value for value, n in counts.items() if n == top]))


GUESS = 0.5  # two answers: a blind guess is right half the time
TARGET = 0.75  # the accuracy HYPE-time's threshold is defined at
EXPOSURE_RANGE = (100.0, 1000.0)  # the staircase's range; thresholds are held within it


def after_approach(correct: np.ndarray, block: np.ndarray) -> np.ndarray:
    """Which trials to fit: each block's trials from its first reversal on (the first
    answer that differs from the block's first answer). Before it the staircase is still
    travelling from its start (500 ms) towards the threshold, and the trials it spends there
    (a run of right answers from far above a short threshold) would pull the estimate."""
    correct = np.asarray(correct, bool)
    block = np.asarray(block)
    keep = np.zeros(correct.size, bool)
    for b in dict.fromkeys(block.tolist()):
        idx = np.flatnonzero(block == b)
        change = np.flatnonzero(correct[idx] != correct[idx[0]])
        if change.size:
            keep[idx[change[0]:]] = True
    return keep


def crossing(exposure_ms, correct, *, target: float = TARGET,
             bounds: tuple[float, float] = EXPOSURE_RANGE) -> float:
    """The exposure at which accuracy reaches ``target``: the isotonic (monotone
    least-squares) fit of the share right at each exposure shown, read where it first
    reaches ``target``, interpolated in log exposure from the exposure shown before, and held
    within ``bounds``. No curve's shape, guess or lapse rate is assumed: a logistic fitted to
    evaluators whose curves were Weibull or logistic in linear time read their thresholds
    1.5-1.8% short at 150 ms (benchmarks/coverage.py, the mixed-curve designs).

    Raises
    ------
    ValueError
        Without trials, or with an exposure that is not positive.
    """
    from scipy.optimize import isotonic_regression

    t = np.asarray(exposure_ms, float)
    if t.size == 0 or np.any(t <= 0):
        raise ValueError("the threshold needs trials with positive exposures")
    shown, which = np.unique(t, return_inverse=True)
    trials = np.bincount(which)
    accuracy = isotonic_regression(np.bincount(which, weights=np.asarray(correct, float))
                                   / trials, weights=trials).x
    reached = np.flatnonzero(accuracy >= target)
    if not reached.size:
        return float(bounds[1])
    j = reached[0]
    if j == 0:
        return float(np.clip(shown[0], *bounds))
    below, above = np.log(shown[j - 1]), np.log(shown[j])
    share = (target - accuracy[j - 1]) / (accuracy[j] - accuracy[j - 1])
    return float(np.clip(np.exp(below + share * (above - below)), *bounds))


def paper_threshold(exposure_ms: np.ndarray, block: np.ndarray) -> float:
    """The paper's HYPE-time figure for one evaluator: the mean over blocks of each block's
    modal exposure."""
    return float(np.mean([modal_exposure(exposure_ms[block == b])
                          for b in dict.fromkeys(block.tolist())]))


def score_time(trials: Trials, *, rounds: int = 10_000, rng: np.random.Generator | None = None,
               level: float = 0.95) -> tuple[list[ModelScore], dict[str, np.ndarray]]:
    """HYPE-time per model: the mean over its evaluators of their 75% thresholds
    (:func:`crossing` on the trials after each block's approach), with Student's t interval
    over evaluators (the percentile bootstrap of 20 evaluators' mean covered 88.5-94%, too
    narrow by the t quantile and the n - 1), the spread between them, and the paper's
    mode-based figure beside it. Longer is more realistic. ``rounds`` and ``rng``: the
    scorers' common signature (this interval resamples nothing)."""
    from scipy.special import stdtrit

    if trials.exposure_ms is None or trials.block is None:
        raise ValueError("HYPE-time needs exposure_ms and block for every trial")
    belongs = evaluator_models(trials)
    wrong = ~trials.correct
    scores, per_evaluator = [], {}
    for model in sorted(set(belongs.values())):
        evaluators = sorted(e for e, m in belongs.items() if m == model)
        values, paper = [], []
        answers = 0
        for e in evaluators:
            mine = np.flatnonzero(trials.evaluator == e)
            answers += mine.size
            exposure, block = trials.exposure_ms[mine], trials.block[mine]
            right = trials.correct[mine]
            keep = after_approach(right, block)
            if not keep.any():
                keep[:] = True
            values.append(crossing(exposure[keep], right[keep]))
            paper.append(paper_threshold(exposure, block))
        values = np.asarray(values, float)
        n = values.size
        se = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
        half = float(stdtrit(n - 1, 1 - (1 - level) / 2)) * se if n > 1 else 0.0
        mask = np.isin(trials.evaluator, evaluators)
        fakes, reals = mask & ~trials.is_real, mask & trials.is_real
        per_evaluator[model] = values
        scores.append(ModelScore(
            model=model, score=float(values.mean()),
            fakes_error=100 * wrong[fakes].mean() if fakes.any() else None,
            reals_error=100 * wrong[reals].mean() if reals.any() else None,
            std=se, ci_low=float(values.mean()) - half, ci_high=float(values.mean()) + half,
            evaluators=len(evaluators),
            answers=answers,
            spread=float(values.std(ddof=1)) if len(values) > 1 else None,
            paper_score=float(np.mean(paper))))
    return _rank(scores), per_evaluator


def psychometric_curve(exposure_ms: np.ndarray, correct: np.ndarray, bin_ms: float = 100.0
                       ) -> list[tuple[float, float, int]]:
    """(bin centre in ms, accuracy, trials) per exposure bin."""
    exposure_ms = np.asarray(exposure_ms, float)
    bins = np.floor(exposure_ms / bin_ms).astype(int)
    out = []
    for b in sorted(set(bins.tolist())):
        mask = bins == b
        out.append(((b + 0.5) * bin_ms, float(np.mean(correct[mask])), int(mask.sum())))
    return out


def separability(per_evaluator: dict[str, np.ndarray]) -> Separability:
    """One-way ANOVA across models on per-evaluator scores, Tukey HSD for every pair, and an
    unpaired (Welch) t-test when there are exactly two models. Tests that need at least two
    evaluators per model are left empty otherwise."""
    groups = {m: np.asarray(v, float) for m, v in per_evaluator.items()}
    result = Separability()
    usable = {m: v for m, v in groups.items() if len(v) >= 2}
    if len(usable) < 2:
        return result
    names = sorted(usable)
    samples = [usable[m] for m in names]
    if all(np.ptp(s) == 0 for s in samples):
        return result  # no within-group variance: the tests are undefined
    from scipy import stats  # (here: importing scipy.stats costs every command 0.25 s)

    anova = stats.f_oneway(*samples)
    result.anova_f, result.anova_p = float(anova.statistic), float(anova.pvalue)
    tukey = stats.tukey_hsd(*samples)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            result.tukey.append({"a": names[i], "b": names[j],
                                 "difference": float(samples[i].mean() - samples[j].mean()),
                                 "p": float(tukey.pvalue[i, j])})
    if len(names) == 2:
        test = stats.ttest_ind(samples[0], samples[1], equal_var=False)
        result.ttest_t, result.ttest_p = float(test.statistic), float(test.pvalue)
    return result
