"""HYPE (Zhou et al. 2019): staircase rules and scores, as pure functions.

HYPE-infinity: each evaluator judges real and fake images without a time limit; the score is
the share of wrong answers (the deception rate), with the fakes error (fakes judged real) and
the reals error (reals judged fake), and a bootstrap interval resampling evaluators.

HYPE-time: an adaptive staircase sets the exposure; an evaluator's score is the mean over
blocks of the block's modal (actual) exposure; a model's score the mean over its evaluators.

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
from scipy import stats


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


@dataclass
class Separability:
    anova_f: float | None = None
    anova_p: float | None = None
    tukey: list[dict] = field(default_factory=list)
    ttest_t: float | None = None
    ttest_p: float | None = None


def _bootstrap_mean(values: np.ndarray, weights: np.ndarray | None, rounds: int,
                    rng: np.random.Generator) -> np.ndarray:
    """Bootstrap of a (weighted) mean over evaluators: resample evaluators with replacement."""
    n = len(values)
    picks = rng.integers(0, n, size=(rounds, n))
    if weights is None:
        return values[picks].mean(axis=1)
    return (values[picks] * weights[picks]).sum(axis=1) / weights[picks].sum(axis=1)


def _rank(scores: list[ModelScore]) -> list[ModelScore]:
    scores.sort(key=lambda s: -s.score)
    for i, s in enumerate(scores, start=1):
        s.rank = i
    return scores


def score_infinity(trials: Trials, *, rounds: int = 10_000,
                   rng: np.random.Generator | None = None, level: float = 0.95
                   ) -> tuple[list[ModelScore], dict[str, np.ndarray]]:
    """HYPE-infinity per model: deception rate (% wrong), fakes and reals error (%), and a
    bootstrap interval resampling evaluators. Returns the scores, best (most deceptive)
    first, and each model's per-evaluator error rates (for separability tests)."""
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
        boot = 100 * _bootstrap_mean(errors / answers, answers, rounds, rng)
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
        ))
    return _rank(scores), per_evaluator


def modal_exposure(exposures: np.ndarray, bin_ms: float = 10.0) -> float:
    """The most frequent exposure, after rounding to ``bin_ms`` (the staircase's step);
    ties go to the mean of the tied values."""
    binned = np.round(np.asarray(exposures, float) / bin_ms) * bin_ms
    counts = Counter(binned.tolist())
    top = max(counts.values())
    return float(np.mean([value for value, n in counts.items() if n == top]))


def score_time(trials: Trials, *, rounds: int = 10_000, rng: np.random.Generator | None = None,
               level: float = 0.95) -> tuple[list[ModelScore], dict[str, np.ndarray]]:
    """HYPE-time per model: per evaluator, the mean over blocks of the block's modal actual
    exposure; the model's score is the mean over evaluators, with a bootstrap interval
    resampling evaluators. Longer is more realistic."""
    if trials.exposure_ms is None or trials.block is None:
        raise ValueError("HYPE-time needs exposure_ms and block for every trial")
    rng = rng if rng is not None else np.random.default_rng()
    belongs = evaluator_models(trials)
    tail = 100 * (1 - level) / 2
    wrong = ~trials.correct
    scores, per_evaluator = [], {}
    for model in sorted(set(belongs.values())):
        evaluators = sorted(e for e, m in belongs.items() if m == model)
        values = []
        answers = 0
        for e in evaluators:
            mine = trials.evaluator == e
            answers += int(mine.sum())
            blocks = sorted(set(trials.block[mine].tolist()))
            values.append(np.mean([modal_exposure(trials.exposure_ms[mine & (trials.block == b)])
                                   for b in blocks]))
        values = np.asarray(values, float)
        boot = _bootstrap_mean(values, None, rounds, rng)
        mask = np.isin(trials.evaluator, evaluators)
        fakes, reals = mask & ~trials.is_real, mask & trials.is_real
        per_evaluator[model] = values
        scores.append(ModelScore(
            model=model, score=float(values.mean()),
            fakes_error=100 * wrong[fakes].mean() if fakes.any() else None,
            reals_error=100 * wrong[reals].mean() if reals.any() else None,
            std=float(boot.std(ddof=1)), ci_low=float(np.percentile(boot, tail)),
            ci_high=float(np.percentile(boot, 100 - tail)), evaluators=len(evaluators),
            answers=answers))
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
