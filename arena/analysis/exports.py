"""Exports: ranked tables (text, CSV, JSON, Parquet), the vote log (CSV, JSON lines,
Parquet, or a Parquet dataset partitioned by campaign, criterion and month) and the log of
tasks closed without a vote (skips and image reports: CSV, JSON lines). pyarrow is imported
only when Parquet is asked for."""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from flask import current_app
from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from arena.analysis import formats
from arena.analysis.leaderboard import Ranking
from arena.errors import Invalid
from arena.extensions import db
from arena.infra.secrets import pseudonym
from arena.models import Comparison, GenModel, Image, ImageReport, Prompt, Task, Vote, Voter
from arena.voting.flags import names as flag_names

COLUMNS = ["rank", "model", "score", "score_low", "score_high", "rating", "ci_low", "ci_high",
           "rank_best", "rank_worst", "tier", "online_elo", "votes", "wins", "win_rate",
           "lead_voters", "lead_share"]


# how much the voters agree on the criterion (arena.ranking.agreement): the same on every row
AGREEMENT_COLUMNS = ["agreement_alpha", "agreement_alpha_low", "agreement_alpha_high",
                     "agreement_majority", "agreement_majority_low", "agreement_majority_high",
                     "agreement_pairs", "agreement_voters"]
INTEGER_COLUMNS = {"rank", "rank_best", "rank_worst", "tier", "votes", "lead_voters",
                   "agreement_pairs", "agreement_voters"}


def clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _csv_cell(value):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


def to_json(ranking: Ranking) -> str:
    return json.dumps([{k: clean(v) for k, v in r.items()} for r in ranking.records()],
                      indent=2)


def _rows(ranking: Ranking) -> list[dict]:
    """The model records with the criterion's agreement on each (empty without one)."""
    found = ranking.agreement
    agree = {c: None if found is None else getattr(found, c.removeprefix("agreement_"))
             for c in AGREEMENT_COLUMNS}
    return [{**record, **agree} for record in ranking.records()]


def to_csv(ranking: Ranking) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS + AGREEMENT_COLUMNS)
    for record in _rows(ranking):
        writer.writerow([_csv_cell(record[c]) for c in COLUMNS + AGREEMENT_COLUMNS])
    return buf.getvalue()


def to_parquet(ranking: Ranking) -> bytes:
    import pyarrow as pa  # imported here: only Parquet exports need it
    import pyarrow.parquet as pq

    def arrow_type(column):
        if column == "model":
            return pa.string()
        return pa.int64() if column in INTEGER_COLUMNS else pa.float64()

    records, columns = _rows(ranking), COLUMNS + AGREEMENT_COLUMNS
    table = pa.Table.from_pydict(
        {c: [clean(r[c]) for r in records] for c in columns},
        schema=pa.schema([(c, arrow_type(c)) for c in columns]))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _lead(m) -> str:
    """How many voters the lead over the next model hinges on, for the table."""
    if m.lead_voters is None:
        return "-"
    return f"{m.lead_voters:,d} voters ({100 * m.lead_share:.1f}%)"


def to_table(ranking: Ranking) -> str:
    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    header = (f"{'rank':>4}  {'model':24} {'score':>7}  {'rating':>7}  {'95% CI':>15}  "
              f"{'ranks':>7}  {'tier':>4}  {'online':>7}  {'votes':>8}  {'win%':>6}  "
              f"{'lead holds unless':>17}")
    lines = [header]
    for m in ranking.models:
        ci = "-" if m.ci_low is None else f"{m.ci_low:.0f}–{m.ci_high:.0f}"
        ranks = ("-" if m.rank_best is None else str(m.rank_best) if m.rank_best == m.rank_worst
                 else f"{m.rank_best}–{m.rank_worst}")
        lines.append(
            f"{fmt(m.rank, '>4') if m.rank else '   -'}  {m.model[:24]:24} "
            f"{fmt(m.score, '7.2f'):>7}  {fmt(m.rating, '7.1f'):>7}  "
            f"{ci:>15}  {ranks:>7}  {fmt(m.tier, '>4')}  {fmt(m.online_elo, '7.1f')}  "
            f"{m.votes:>8,d}  {fmt(None if m.win_rate is None else 100 * m.win_rate, '6.1f')}  "
            f"{_lead(m):>17}")
    title = f"{ranking.method.upper()} ranking"
    if ranking.criterion:
        title += f" — {ranking.criterion}"
    title += f" — {ranking.total_votes:,d} votes"
    if ranking.bootstrap_rounds:
        title += f", {ranking.bootstrap_rounds} bootstrap rounds"
    elif ranking.intervals == "instant":
        title += ", instant (sandwich) intervals"
    if ranking.cluster:
        title += (", resampling single votes" if ranking.cluster == "none"
                  else f", resampling {ranking.units:,d} voters and {ranking.prompts:,d} prompts"
                  if ranking.prompts else f", resampling {ranking.units:,d} {ranking.cluster}s")
    head = [title]
    if ranking.slice:
        head.append("slice: " + ", ".join(f"{k}={v}" for k, v in ranking.slice.items()))
    flags = [f"! {f}" for f in ranking.flags]
    return "\n".join(head + lines + _agreement_line(ranking) + flags) + "\n"


def _agreement_line(ranking: Ranking) -> list[str]:
    a = ranking.agreement
    if a is None:
        return []
    over = (f"{a.pairs:,d} pairs voted more than once" if a.voters is None
            else f"{a.pairs:,d} pairs voted more than once and their {a.voters:,d} voters")
    if a.alpha_low is None:
        return [f"voters agree: Krippendorff's alpha {a.alpha:.2f}, {100 * a.majority:.1f}% of "
                f"votes with their pair's majority, over {over}; {a.note}"]
    return [f"voters agree: Krippendorff's alpha {a.alpha:.2f} ({a.alpha_low:.2f} to "
            f"{a.alpha_high:.2f}), {100 * a.majority:.1f}% of votes with their pair's majority "
            f"({100 * a.majority_low:.1f}-{100 * a.majority_high:.1f}%), 95% intervals over "
            f"{over}"]


# --- The vote log -------------------------------------------------------------------------

VOTE_COLUMNS = [
    "vote_id", "created_at", "criterion", "prompt_id", "prompt_category", "left_image_id",
    "right_image_id", "left_model", "right_model", "winner", "winner_model", "response_ms",
    "server_ms", "flags", "voter", "age_group", "gender", "country", "continent",
    "is_validation", "validation_correct", "language",
]


def _with_models(query):
    """``query`` (over tasks) joined to both images' models, as ``left_model`` and
    ``right_model`` columns (None for a gold asset)."""
    left_img, right_img = aliased(Image), aliased(Image)
    left_model, right_model = aliased(GenModel), aliased(GenModel)
    return (query.add_columns(left_model.name.label("left_model"),
                              right_model.name.label("right_model"))
            .join(left_img, left_img.id == Task.left_image_id)
            .join(right_img, right_img.id == Task.right_image_id)
            .outerjoin(left_model, left_model.id == left_img.model_id)
            .outerjoin(right_model, right_model.id == right_img.model_id))


def _vote_query():
    return _with_models(
        select(
            Vote.id.label("vote_id"), Vote.created_at, Vote.criterion,
            Comparison.prompt_id, Prompt.category.label("prompt_category"),
            Task.left_image_id, Task.right_image_id,
            Vote.choice.label("winner"), Vote.response_ms, Vote.server_ms, Vote.flags,
            Voter.public_id,
            Voter.age_group, Voter.gender, Voter.country, Voter.continent,
            Vote.is_validation, Vote.correct.label("validation_correct"), Vote.language,
            Comparison.campaign_id,
        )
        .join(Task, Task.id == Vote.task_id)
        .join(Comparison, Comparison.id == Vote.comparison_id)
        .outerjoin(Prompt, Prompt.id == Comparison.prompt_id)
        .join(Voter, Voter.id == Vote.voter_id)
    ).order_by(Vote.id)


def _snapshot(engine, query, batch: int):
    """Yield the rows of ``query`` from one consistent snapshot, ``batch`` at a time, as
    columns (a dict of name to list), with a server-side cursor: memory stays flat however
    long the log, and no row becomes a dict of its own."""
    options = {"stream_results": True, "yield_per": batch}
    if engine.dialect.name == "postgresql":
        options["isolation_level"] = "REPEATABLE READ"
    with engine.connect().execution_options(**options) as connection:
        result = connection.execute(query)
        names = list(result.keys())
        for rows in result.partitions():
            yield dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))


@cache
def _flag_text(flags: int) -> str:
    return "+".join(flag_names(flags))  # "" = counted


def _pseudonymised(key: str, public_ids: list[str]) -> list[str]:
    """Each voter's pseudonym, computed once per batch (a voter's votes come together)."""
    names: dict[str, str] = {}
    return [names.get(p) or names.setdefault(p, pseudonym(key, p)) for p in public_ids]


def iter_votes(engine, key: str, batch: int = 5000, columns: list[str] = VOTE_COLUMNS):
    """Yield the votes ``batch`` at a time as columns (``columns``: ``VOTE_COLUMNS``, and
    ``campaign_id`` when asked), voters pseudonymised with ``key``."""
    for cols in _snapshot(engine, _vote_query(), batch):
        cols["voter"] = _pseudonymised(key, cols.pop("public_id"))
        cols["winner_model"] = [left if winner == "left" else right for winner, left, right
                                in zip(cols["winner"], cols["left_model"], cols["right_model"],
                                       strict=True)]
        cols["flags"] = [_flag_text(f) for f in cols["flags"]]
        yield {name: cols[name] for name in columns}


def _row_tuples(cols: dict[str, list], columns: list[str]):
    return zip(*(cols[name] for name in columns), strict=True)


def rows_csv(batches, columns: list[str], timestamp: str):
    """CSV text of column batches, header first, one chunk per batch; ``timestamp`` is the
    column written in ISO 8601."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    yield buf.getvalue()
    for cols in batches:
        buf.seek(0)
        buf.truncate()
        cols[timestamp] = [t.isoformat() for t in cols[timestamp]]
        writer.writerows(_row_tuples(cols, columns))
        yield buf.getvalue()


def votes_csv(batches):
    return rows_csv(batches, VOTE_COLUMNS, "created_at")


def votes_jsonl(batches):
    for cols in batches:
        names = list(cols)
        yield "".join(json.dumps(dict(zip(names, row, strict=True)), default=str) + "\n"
                      for row in _row_tuples(cols, names))


def _vote_schema():
    import pyarrow as pa

    return pa.schema([
        ("vote_id", pa.int64()), ("created_at", pa.timestamp("us")), ("criterion", pa.string()),
        ("prompt_id", pa.int64()), ("prompt_category", pa.string()),
        ("left_image_id", pa.int64()), ("right_image_id", pa.int64()),
        ("left_model", pa.string()), ("right_model", pa.string()), ("winner", pa.string()),
        ("winner_model", pa.string()), ("response_ms", pa.int64()),
        ("server_ms", pa.int64()), ("flags", pa.string()), ("voter", pa.string()),
        ("age_group", pa.string()), ("gender", pa.string()), ("country", pa.string()),
        ("continent", pa.string()), ("is_validation", pa.bool_()),
        ("validation_correct", pa.bool_()), ("language", pa.string()),
    ])


def votes_parquet(batches, sink) -> None:
    """Write row groups to ``sink`` (a binary file) batch by batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _vote_schema()
    with pq.ParquetWriter(sink, schema) as writer:
        for cols in batches:
            writer.write_batch(pa.RecordBatch.from_pydict(cols, schema=schema))


PARTITIONS = ("campaign_id", "criterion", "month")


def vote_count() -> int:
    return db.session.scalar(select(func.count()).select_from(Vote))


def votes_dataset(folder: Path, batch: int = 50_000, progress=None) -> int:
    """Write the whole vote log under ``folder`` (new or empty) as a Parquet dataset
    partitioned hive-style by ``PARTITIONS`` (``campaign_id=3/criterion=preference/
    month=2026-11/part-0.parquet``; votes on pairs of no campaign under campaign_id's
    default partition), from one snapshot ``batch`` rows at a time: memory stays flat however
    long the log. DuckDB, pandas and pyarrow read the folder as one table. Returns the rows
    written; ``progress(n)`` is called per batch."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise Invalid(f"{folder} is not an empty folder: name a new one", field="folder")
    schema = (_vote_schema().append(pa.field("campaign_id", pa.int64()))
              .append(pa.field("month", pa.string())))
    written = 0
    # (read here: pyarrow pulls the batches from a thread of its own, outside the app context)
    votes = iter_votes(db.engine, current_app.config["PSEUDONYM_KEY"], batch,
                       columns=[*VOTE_COLUMNS, "campaign_id"])

    def record_batches():
        nonlocal written
        for cols in votes:
            cols["month"] = [t.strftime("%Y-%m") for t in cols["created_at"]]
            written += len(cols["month"])
            if progress is not None:
                progress(len(cols["month"]))
            yield pa.RecordBatch.from_pydict(cols, schema=schema)

    ds.write_dataset(record_batches(), folder, schema=schema, format="parquet",
                     partitioning=list(PARTITIONS), partitioning_flavor="hive",
                     basename_template="part-{i}.parquet",
                     existing_data_behavior="overwrite_or_ignore",
                     # (a row group per batch at most: pyarrow holds up to a million rows a
                     # partition before writing by default, memory that grows with the log)
                     max_rows_per_group=batch, min_rows_per_group=min(batch, 10_000))
    return written


@dataclass
class Download:
    """A file for the client: its body (bytes, text, an iterator of text or a file object),
    media type and name."""

    body: object
    mimetype: str
    filename: str


def vote_log(fmt: str) -> Download:
    """The whole vote log, one row per vote, voters pseudonymised with ``PSEUDONYM_KEY``:
    CSV and JSON lines stream from one snapshot; Parquet is written in row groups to a
    spooled file. Raises Invalid for another format."""
    chosen = formats.choose(formats.VOTES, fmt)
    return _log(chosen, iter_votes(db.engine, current_app.config["PSEUDONYM_KEY"]), "votes")


def _log(chosen: formats.Format, batches, stem: str) -> Download:
    """A log's batches written as ``chosen``: streamed text, or a spooled binary file."""
    write = _writer(chosen)
    if chosen.binary:
        sink = tempfile.SpooledTemporaryFile(max_size=64 * 2**20)  # noqa: SIM115 - the response closes it
        write(batches, sink)
        sink.seek(0)
        return Download(sink, chosen.mimetype, stem + chosen.suffix)
    return Download(write(batches), chosen.mimetype, stem + chosen.suffix)


# --- Tasks closed without a vote -----------------------------------------------------------

SKIP_COLUMNS = [
    "task_id", "skipped_at", "criterion", "comparison_id", "prompt_id", "left_image_id",
    "right_image_id", "left_model", "right_model", "is_validation", "reported_side",
    "report_reason", "voter", "age_group", "gender", "country", "continent",
]


def _skip_query():
    return _with_models(
        select(
            Task.id.label("task_id"), Task.skipped_at, Comparison.criterion,
            Comparison.id.label("comparison_id"), Comparison.prompt_id,
            Task.left_image_id, Task.right_image_id,
            Comparison.is_validation, ImageReport.side.label("reported_side"),
            ImageReport.reason.label("report_reason"), Voter.public_id,
            Voter.age_group, Voter.gender, Voter.country, Voter.continent,
        )
        .join(Comparison, Comparison.id == Task.comparison_id)
        .join(Voter, Voter.id == Task.voter_id)
        .outerjoin(ImageReport, ImageReport.task_id == Task.id)
        .where(Task.skipped_at.is_not(None))
    ).order_by(Task.id)


def iter_skips(engine, key: str, batch: int = 5000):
    """Yield the tasks closed without a vote as columns (``SKIP_COLUMNS``), with the image
    report that closed each, if any."""
    for cols in _snapshot(engine, _skip_query(), batch):
        cols["voter"] = _pseudonymised(key, cols.pop("public_id"))
        yield {name: cols[name] for name in SKIP_COLUMNS}


def skip_log(fmt: str) -> Download:
    """Every task a voter closed without a vote ("Can't decide", or an image reported),
    streamed as CSV or JSON lines, voters pseudonymised as in the vote log. A pair voters
    keep skipping is one they find too close to call (or a broken image). Raises Invalid
    for another format."""
    chosen = formats.choose(formats.SKIPS, fmt)
    return _log(chosen, iter_skips(db.engine, current_app.config["PSEUDONYM_KEY"]), "skips")


def skips_csv(batches):
    return rows_csv(batches, SKIP_COLUMNS, "skipped_at")


def write_ranking(ranking: Ranking, fmt: str) -> str | bytes:
    """A ranked table in format ``fmt`` (:data:`arena.analysis.formats.RANKING`).
    Raises Invalid for another format."""
    return _writer(formats.choose(formats.RANKING, fmt))(ranking)


def ranking_download(ranking: Ranking, fmt: str) -> Download:
    """A ranked table as a file named after its criterion and method (the formats of
    :data:`arena.analysis.formats.RANKING_DOWNLOADS`). Raises Invalid for another."""
    chosen = formats.choose(formats.RANKING_DOWNLOADS, fmt)
    name = f"leaderboard-{ranking.criterion}-{ranking.method}{chosen.suffix}"
    return Download(_writer(chosen)(ranking), chosen.mimetype, name)


def _writer(chosen: formats.Format):
    """The function of this module that writes ``chosen`` (named in its row)."""
    return globals()[chosen.writer]
