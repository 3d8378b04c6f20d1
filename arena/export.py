"""Ranked tables out: text table, CSV, JSON, Parquet."""

from __future__ import annotations

import io
import json
import math

from .rankings import Ranking

FORMATS = ("table", "csv", "json", "parquet")
COLUMNS = ["rank", "model", "score", "score_low", "score_high", "rating", "ci_low", "ci_high",
           "rank_upper_bound", "tier", "online_elo", "votes", "wins", "win_rate"]


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def ranking_frame(ranking: Ranking):
    import pandas as pd  # imported here: it costs 0.3 s of start-up for every command

    return pd.DataFrame(ranking.records(), columns=COLUMNS)


def to_json(ranking: Ranking) -> str:
    return json.dumps([{k: _clean(v) for k, v in r.items()} for r in ranking.records()],
                      indent=2)


def to_csv(ranking: Ranking) -> str:
    return ranking_frame(ranking).to_csv(index=False, float_format="%.6g")


def to_parquet(ranking: Ranking) -> bytes:
    buf = io.BytesIO()
    ranking_frame(ranking).to_parquet(buf, index=False)
    return buf.getvalue()


def to_table(ranking: Ranking) -> str:
    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    header = (f"{'rank':>4}  {'model':24} {'score':>7}  {'rating':>7}  {'95% CI':>15}  "
              f"{'rank≤':>5}  {'online':>7}  {'votes':>8}  {'win%':>6}")
    lines = [header]
    for m in ranking.models:
        ci = "-" if m.ci_low is None else f"{m.ci_low:.0f}–{m.ci_high:.0f}"
        lines.append(
            f"{m.rank:>4}  {m.model[:24]:24} {m.score:7.2f}  {fmt(m.rating, '7.1f')}  "
            f"{ci:>15}  {fmt(m.rank_upper_bound, '>5')}  {fmt(m.online_elo, '7.1f')}  "
            f"{m.votes:>8,d}  {fmt(None if m.win_rate is None else 100 * m.win_rate, '6.1f')}")
    title = f"{ranking.method.upper()} ranking"
    if ranking.criterion:
        title += f" — {ranking.criterion}"
    title += f" — {ranking.total_votes:,d} votes"
    if ranking.bootstrap_rounds:
        title += f", {ranking.bootstrap_rounds} bootstrap rounds"
    head = [title]
    if ranking.slice:
        head.append("slice: " + ", ".join(f"{k}={v}" for k, v in ranking.slice.items()))
    flags = [f"! {f}" for f in ranking.flags]
    return "\n".join(head + lines + flags) + "\n"


# --- The vote log -------------------------------------------------------------------------

VOTE_FORMATS = ("csv", "jsonl", "parquet")
VOTE_COLUMNS = [
    "vote_id", "created_at", "criterion", "prompt_id", "prompt_category", "left_image_id",
    "right_image_id", "left_model", "right_model", "winner", "winner_model", "response_ms",
    "voter", "age_group", "gender", "country", "continent", "is_validation",
    "validation_correct",
]


def pseudonym(secret: str, public_id: str) -> str:
    """A stable voter pseudonym for exports that cannot be turned back into the id the
    voter's cookie carries."""
    import hashlib
    import hmac

    return hmac.new(secret.encode(), public_id.encode(), hashlib.sha256).hexdigest()[:16]


def _vote_query():
    from sqlalchemy import select
    from sqlalchemy.orm import aliased

    from .models import Comparison, GenModel, Image, Prompt, Task, Vote, Voter

    left_img, right_img = aliased(Image), aliased(Image)
    left_model, right_model = aliased(GenModel), aliased(GenModel)
    return (
        select(
            Vote.id.label("vote_id"), Vote.created_at, Vote.criterion,
            Comparison.prompt_id, Prompt.category.label("prompt_category"),
            Task.left_image_id, Task.right_image_id,
            left_model.name.label("left_model"), right_model.name.label("right_model"),
            Vote.choice.label("winner"), Vote.response_ms, Voter.public_id,
            Voter.age_group, Voter.gender, Voter.country, Voter.continent,
            Vote.is_validation, Vote.correct.label("validation_correct"),
        )
        .join(Task, Task.id == Vote.task_id)
        .join(Comparison, Comparison.id == Vote.comparison_id)
        .outerjoin(Prompt, Prompt.id == Comparison.prompt_id)
        .join(Voter, Voter.id == Vote.voter_id)
        .join(left_img, left_img.id == Task.left_image_id)
        .join(right_img, right_img.id == Task.right_image_id)
        .outerjoin(left_model, left_model.id == left_img.model_id)
        .outerjoin(right_model, right_model.id == right_img.model_id)
        .order_by(Vote.id)
    )


def iter_votes(engine, secret: str, batch: int = 5000):
    """Yield lists of vote dicts (``VOTE_COLUMNS``) from one consistent snapshot, ``batch``
    rows at a time, with a server-side cursor: memory stays flat however long the log."""
    options = {"stream_results": True, "yield_per": batch}
    if engine.dialect.name == "postgresql":
        options["isolation_level"] = "REPEATABLE READ"
    with engine.connect().execution_options(**options) as connection:
        result = connection.execute(_vote_query())
        for rows in result.mappings().partitions():
            out = []
            for row in rows:
                record = dict(row)
                record["voter"] = pseudonym(secret, record.pop("public_id"))
                record["winner_model"] = record[f"{record['winner']}_model"]
                out.append({k: record[k] for k in VOTE_COLUMNS})
            yield out


def votes_csv(batches):
    import csv

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=VOTE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    yield buf.getvalue()
    for rows in batches:
        buf.seek(0)
        buf.truncate()
        for row in rows:
            row["created_at"] = row["created_at"].isoformat()
            writer.writerow(row)
        yield buf.getvalue()


def votes_jsonl(batches):
    for rows in batches:
        yield "".join(json.dumps(row, default=str) + "\n" for row in rows)


def votes_parquet(batches, sink) -> None:
    """Write row groups to ``sink`` (a binary file) batch by batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([
        ("vote_id", pa.int64()), ("created_at", pa.timestamp("us")), ("criterion", pa.string()),
        ("prompt_id", pa.int64()), ("prompt_category", pa.string()),
        ("left_image_id", pa.int64()), ("right_image_id", pa.int64()),
        ("left_model", pa.string()), ("right_model", pa.string()), ("winner", pa.string()),
        ("winner_model", pa.string()), ("response_ms", pa.int64()), ("voter", pa.string()),
        ("age_group", pa.string()), ("gender", pa.string()), ("country", pa.string()),
        ("continent", pa.string()), ("is_validation", pa.bool_()),
        ("validation_correct", pa.bool_()),
    ])
    with pq.ParquetWriter(sink, schema) as writer:
        for rows in batches:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
