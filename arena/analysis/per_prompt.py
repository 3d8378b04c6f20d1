"""Rankings per prompt from the database: which model is best for each prompt, each
prompt's strengths shrunk toward the overall order (:mod:`arena.ranking.per_prompt`), for
``arena rank --by prompt`` and its files."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field

import numpy as np
from sqlalchemy import select

from arena.analysis.tallies import RankingError, Slice, tally
from arena.extensions import db
from arena.models import Prompt
from arena.ranking.bradley_terry import ELO_SCALE, LOG10
from arena.ranking.per_prompt import per_prompt

COLUMNS = ["prompt_id", "prompt", "prompt_votes", "rank", "model", "rating", "ci_low",
           "ci_high", "overall_rating"]


@dataclass(frozen=True)
class PromptRank:
    prompt_id: int
    prompt: str
    prompt_votes: int
    rank: int
    model: str
    rating: float
    ci_low: float
    ci_high: float
    overall_rating: float  # the model's rating over every prompt (the same fit's)


@dataclass
class ByPrompt:
    criterion: str
    rows: list[PromptRank]  # per prompt (most voted first), its models best first
    effect_elo: float  # how far a model's strength moves from prompt to prompt (sd, Elo)
    flags: list[str] = field(default_factory=list)


def rank_by_prompt(criterion: str, slice_: Slice | None = None, level: float = 0.95
                   ) -> ByPrompt:
    """Each prompt's ranking of the models voted on in ``slice_``. Raises RankingError where
    fewer than two models or two prompts have votes."""
    counted = tally(criterion, slice_ or Slice(), cluster="prompt")
    data = counted.counts
    played = (data.matrix() + data.matrix().T).sum(axis=1) > 0
    active = np.flatnonzero(played)
    if active.size < 2 or data.n_units < 2:
        raise RankingError("a ranking per prompt needs votes on two models and two prompts",
                           field="criterion")
    found = per_prompt(data.restricted(active), level=level)
    names = [counted.names[i] for i in active]
    ids = counted.prompts.tolist()
    texts = dict(db.session.execute(select(Prompt.id, Prompt.text)
                                    .where(Prompt.id.in_(ids))).all())
    overall = ELO_SCALE * found.overall / LOG10 + 1000.0
    rows = []
    for unit in np.argsort(-found.votes, kind="stable"):
        order = np.argsort(-found.log_strengths[unit], kind="stable")
        rows += [PromptRank(int(ids[unit]), texts.get(int(ids[unit]), ""),
                            round(float(found.votes[unit])), place, names[k],
                            float(found.ratings[unit, k]), float(found.rating_low[unit, k]),
                            float(found.rating_high[unit, k]), float(overall[k]))
                 for place, k in enumerate(order, start=1)]
    flags = list(counted.flags)
    flags.append(f"each prompt's strengths are shrunk toward the overall order: a model's "
                 f"strength moves about {ELO_SCALE * found.tau / LOG10:.0f} Elo from prompt to "
                 "prompt; a prompt with few votes stays near the overall order")
    return ByPrompt(criterion, rows, ELO_SCALE * found.tau / LOG10, flags)


def write(result: ByPrompt, fmt: str) -> str | bytes:
    """``result`` as text (a table per prompt), CSV, JSON or Parquet: one row per prompt
    and model. Raises RankingError for another format."""
    records = [asdict(row) for row in result.rows]
    if fmt == "table":  # (a block per prompt, then the flags, as a ranked table ends)
        lines, current = [], None
        for row in result.rows:
            if row.prompt_id != current:
                current = row.prompt_id
                if lines:
                    lines.append("")
                lines += [f"#{row.prompt_id} {row.prompt[:70]} ({row.prompt_votes} votes)",
                          f"  {'rank':>4}  {'model':24} {'rating':>7}  {'95% CI':>11}  "
                          f"{'overall':>7}"]
            lines.append(f"  {row.rank:>4}  {row.model[:24]:24} {row.rating:7.1f}  "
                         f"{row.ci_low:5.0f}–{row.ci_high:<5.0f}  {row.overall_rating:7.1f}")
        return "\n".join(lines + [f"! {flag}" for flag in result.flags]) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: f"{v:.6g}" if isinstance(v, float) else v
                          for k, v in record.items()} for record in records)
        return buf.getvalue()
    if fmt == "json":
        return json.dumps({"criterion": result.criterion, "effect_elo": result.effect_elo,
                           "flags": result.flags, "rows": records}, indent=2)
    if fmt == "parquet":
        import pyarrow as pa  # (only Parquet needs it)
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(records), buf)
        return buf.getvalue()
    raise RankingError("a ranking per prompt is written as table, csv, json or parquet",
                       field="format")
