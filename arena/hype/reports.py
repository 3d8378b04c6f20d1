"""HYPE score tables out: the paper's table as text, CSV and JSON — one format for the API,
the CLI and anyone else, so a score reads the same wherever it is printed."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

from arena.ranking.hype import ModelScore, Separability

SCORE_COLUMNS = ("rank", "model", "score", "fakes_error", "reals_error", "std", "ci_low",
                 "ci_high", "evaluators", "answers", "spread", "paper_score")
TITLES = {"infinity": "HYPE-∞ (deception rate)",
          "time": "HYPE-time (75% threshold, psychometric fit)"}


def score_rows(scores: list[ModelScore]) -> list[dict]:
    return [{k: asdict(s)[k] for k in SCORE_COLUMNS} for s in scores]


def scores_csv(scores: list[ModelScore]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(SCORE_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(score_rows(scores))
    return buf.getvalue()


def scores_document(mode: str, scores: list[ModelScore], tests: Separability, **extra) -> dict:
    """The JSON form: ``{"mode", "models", "separability", **extra}``."""
    return {"mode": mode, **extra, "models": score_rows(scores),
            "separability": asdict(tests)}


def scores_json(mode: str, scores: list[ModelScore], tests: Separability) -> str:
    return json.dumps(scores_document(mode, scores, tests), indent=2)


def scores_table(mode: str, scores: list[ModelScore], tests: Separability,
                 rounds: int) -> str:
    """The paper's table as text, then the separability tests."""
    unit = "%" if mode == "infinity" else "ms"
    how = ("evaluators x images" if mode == "infinity" else "evaluators")
    lines = [f"{TITLES[mode]}, 95% bootstrap CI over {how}, {rounds:,d} rounds",
             f"{'rank':>4}  {'model':20} {'HYPE':>9} {'fakes err':>9} {'reals err':>9} "
             f"{'std':>7} {'95% CI':>17} {'evals':>5} {'spread':>7}"
             + (f" {'paper':>9}" if mode == "time" else "")]
    for s in scores:
        fe = "-" if s.fakes_error is None else f"{s.fakes_error:.1f}%"
        re_ = "-" if s.reals_error is None else f"{s.reals_error:.1f}%"
        spread = "-" if s.spread is None else f"{s.spread:.1f}"
        paper = "" if mode != "time" else f" {s.paper_score:7.1f}ms"
        lines.append(f"{s.rank:>4}  {s.model[:20]:20} {s.score:7.1f}{unit:>2} {fe:>9} "
                     f"{re_:>9} {s.std:7.2f} {s.ci_low:8.1f}–{s.ci_high:<8.1f} "
                     f"{s.evaluators:>5} {spread:>7}{paper}")
    if mode == "time":
        lines.append("paper: the mean over blocks of the modal exposure (Zhou et al.), for "
                     "comparison; biased by the staircase's approach")
    if tests.anova_p is not None:
        lines.append(f"ANOVA across models: F = {tests.anova_f:.2f}, p = {tests.anova_p:.3g}")
        lines += [f"  Tukey HSD {t['a']} vs {t['b']}: difference {t['difference']:.2f}, "
                  f"p = {t['p']:.3g}" for t in tests.tukey]
    if tests.ttest_p is not None:
        lines.append(f"Welch t-test: t = {tests.ttest_t:.2f}, p = {tests.ttest_p:.3g}")
    return "\n".join(lines) + "\n"
