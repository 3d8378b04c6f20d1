"""Rankings over a growing vote log on PostgreSQL: the whole log against the ranking rollup.

    .venv/bin/python benchmarks/scale.py [--sizes 2000000,20000000] [--postgres URL]
                                         [--models 20] [--votes-per-voter 40] [--repeats 3]

Builds a throwaway database (dropped at the end unless ``ARENA_BENCH_KEEP=1``):
``--models`` models, 200 prompts with one image per model, every pair of them compared on
preference; then grows the log to each size in ``--sizes`` with INSERT ... SELECT over
generate_series (voters casting about ``--votes-per-voter`` votes each over random pairs,
the better model winning by Bradley-Terry odds, stamps spread over the 90 days before the
hour's cut-off). At each size
it prints, as medians of ``--repeats`` runs (3):

* the public leaderboard (``GET /leaderboard``, instant intervals clustered by voter and
  prompt), and the same sliced by one continent (voters answer continent, gender and age
  group; votes come in three languages), from the whole log and from the rollup;
* ``arena rank --intervals instant`` (the whole command, a new process) from the rollup;
* the rollup's refresh: to the size (votes/s), and for 10,000 new votes;
* a campaign's progress figures as the hour's first request (or the rollup's timer)
  computes them, from the whole log and from the rollup; and its page as a visitor gets it
  once the timer has taken them (``arena votes rollup``).

Goals (issue "beyond one box"): leaderboard < 100 ms and ``arena rank`` < 1.5 s at 100M,
flat in the log size; refresh in proportion to the new votes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import psycopg
from harness import median_s, scratch_dir
from sqlalchemy import func, insert, select, update

from arena import create_app
from arena.analysis import published, rollups
from arena.campaigns.progress import progress, take_public_figures
from arena.extensions import db
from arena.infra.instance import upgrade_schema
from arena.models import (
    Campaign,
    Comparison,
    GenModel,
    Image,
    PromptSet,
    RankingRollup,
    Vote,
    utcnow,
)
from arena.voting.votes import ensure_ratings
from tests.factories import image_rows

ARENA = str(Path(sys.executable).with_name("arena"))
DAYS = 90
NEW_VOTES = 10_000


def build_campaign(n_models: int) -> Campaign:
    models = [GenModel(name=f"model-{k:02d}") for k in range(n_models)]
    db.session.add_all(models)
    db.session.commit()
    ensure_ratings([m.id for m in models])
    prompts = image_rows("scale", "benchmark", [f"scale {i}" for i in range(200)], models, 1)
    db.session.commit()
    prompt_set = db.session.scalar(select(PromptSet.id).order_by(PromptSet.id.desc()))
    campaign = Campaign(name="scale", prompt_set_id=prompt_set, criteria="preference",
                        published_at=utcnow())
    db.session.add(campaign)
    db.session.flush()
    images = db.session.execute(select(Image.id, Image.prompt_id, Image.model_id).where(
        Image.prompt_id.in_(prompts)).order_by(Image.model_id)).all()
    by_prompt: dict[int, list] = {}
    for image in images:
        by_prompt.setdefault(image.prompt_id, []).append(image)
    rows = [{"criterion": "preference", "prompt_id": prompt, "image_a_id": a.id,
             "image_b_id": b.id, "target_votes": 26, "shuffle_key": (a.id * 7919 + b.id),
             "campaign_id": campaign.id}
            for prompt, shown in by_prompt.items()
            for i, a in enumerate(shown) for b in shown[i + 1:]]
    db.session.execute(insert(Comparison), rows)
    db.session.commit()
    return campaign


def grow(url: str, upto: int, per_voter: int, before) -> int:
    """Add votes (with their voters, sessions and tasks) until the log holds ``upto``."""
    with psycopg.connect(url, autocommit=True) as conn:
        have = conn.execute("SELECT count(*) FROM vote").fetchone()[0]
        first_comparison, n_comparisons = conn.execute(
            "SELECT min(id), count(*) FROM comparison").fetchone()
        span = DAYS * 86400.0 / max(upto, 1)
        step = 1_000_000
        # a bulk load as PostgreSQL's manual advises: the secondary indexes built once after
        # it, the foreign keys not checked row by row (the rows are consistent by design)
        indexes = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('vote', 'task') "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint)").fetchall()
        for name, _ in indexes:
            conn.execute(f'DROP INDEX "{name}"')
        conn.execute("SET session_replication_role = replica")
        for start in range(have, upto, step):
            end = min(upto, start + step)
            _batch(conn, start, end, per_voter, first_comparison, n_comparisons, before, span)
            print(f"    {end:,d} votes", end="\r", flush=True)
        conn.execute("SET session_replication_role = DEFAULT")
        conn.execute("SET maintenance_work_mem = '1GB'")
        for _, definition in indexes:
            conn.execute(definition)
        for table in ("vote", "task", "voter", "session", "comparison"):
            conn.execute(f"VACUUM ANALYZE {table}")
    return upto


def _batch(conn, start, end, per_voter, first_comparison, n_comparisons, before, span):
    """Votes ``start``..``end`` (0-based, over the whole log): vote k by voter k // per_voter,
    on comparison hash(k), stamped k * span seconds into the log's days."""
    voters = (start // per_voter, (end - 1) // per_voter)
    conn.execute("""
        INSERT INTO voter (id, public_id, trust, validations_passed, validations_failed,
                           pool, created_at, earned_at, continent, gender, age_group)
        SELECT v, 'scale' || v, 1, 0, 0, 0, now(), now(),
               (ARRAY['AF','AS','EU','NA','OC','SA'])[v %% 6 + 1],
               (ARRAY['female','male'])[v %% 2 + 1], (ARRAY['18-29','30-39','40-49'])[v %% 3 + 1]
        FROM generate_series(%s::bigint, %s) v
        ON CONFLICT (id) DO NOTHING""", (voters[0] + 1, voters[1] + 1))
    conn.execute("""
        INSERT INTO session (id, public_id, voter_id, criterion, created_at)
        SELECT v, 'scale' || v, v, 'preference', now() FROM generate_series(%s::bigint, %s) v
        ON CONFLICT (id) DO NOTHING""", (voters[0] + 1, voters[1] + 1))
    origin = before - timedelta(days=DAYS)
    conn.execute("""
        WITH k AS (SELECT k, k / %(per)s + 1 AS voter,
                          %(first)s + (k * 2654435761 %% %(n)s) AS comparison
                   FROM generate_series(%(start)s::bigint, %(end)s - 1) k)
        INSERT INTO task (id, session_id, voter_id, comparison_id, position, left_image_id,
                          right_image_id, issued_at, answered_at)
        SELECT k + 1, voter, voter, comparison, k %% %(per)s, c.image_a_id, c.image_b_id,
               %(origin)s + make_interval(secs => k * %(span)s),
               %(origin)s + make_interval(secs => k * %(span)s)
        FROM k JOIN comparison c ON c.id = comparison""",
                 {"per": per_voter, "first": first_comparison, "n": n_comparisons,
                  "start": start, "end": end, "origin": origin, "span": span})
    # the model with the higher id is better by 40 Elo per step: P(a wins) from its odds
    conn.execute("""
        INSERT INTO vote (id, task_id, voter_id, comparison_id, criterion, choice,
                          winner_image_id, loser_image_id, winner_model_id, loser_model_id,
                          is_validation, flags, response_ms, created_at, public_at,
                          language)
        SELECT t.id, t.id, t.voter_id, t.comparison_id, 'preference',
               CASE WHEN left_wins THEN 'left' ELSE 'right' END,
               CASE WHEN left_wins THEN a.id ELSE b.id END,
               CASE WHEN left_wins THEN b.id ELSE a.id END,
               CASE WHEN left_wins THEN a.model_id ELSE b.model_id END,
               CASE WHEN left_wins THEN b.model_id ELSE a.model_id END,
               false, 0, 1500, t.answered_at, t.answered_at,
               (ARRAY['en','es','zh'])[t.id %% 3 + 1]
        FROM (SELECT t.*, ((t.id::bigint * 40503) %% 10007) / 10007.0
                          < 1 / (1 + power(10, (b.model_id - a.model_id) * 40 / 400.0))
                          AS left_wins
              FROM task t JOIN image a ON a.id = t.left_image_id
                          JOIN image b ON b.id = t.right_image_id
              WHERE t.id > %(start)s AND t.id <= %(end)s) t
        JOIN image a ON a.id = t.left_image_id JOIN image b ON b.id = t.right_image_id""",
                 {"start": start, "end": end})
    for table in ("voter", "session", "task", "vote"):
        conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                     f"(SELECT max(id) FROM {table}))")


def measure(app, url: str, sa_url: str, campaign_id: int, instance: Path, repeats: int
            ) -> dict:
    client = app.test_client()

    def board(sliced: str = ""):
        response = client.get(f"/leaderboard?criterion=preference{sliced}")
        assert response.status_code == 200, response.status_code

    def sliced_board():
        board("&continent=EU")

    def page(name):
        response = client.get(f"/campaigns/{name}")
        assert response.status_code == 200, response.status_code

    figures = {}
    with app.app_context():
        cut = published.cutoff()
        db.session.execute(update(Vote).where(Vote.created_at >= cut)  # (the last size's new)
                           .values(created_at=cut - timedelta(minutes=1),
                                   public_at=cut - timedelta(minutes=1)))
        rollups.reset()
        db.session.commit()
        published.forget()
        board()  # (this hour's Elo figures, stored: both boards read them)
        figures["board_scan"] = median_s(board, repeats)
        figures["sliced_scan"] = median_s(sliced_board, repeats)
        campaign = db.session.get(Campaign, campaign_id)
        figures["progress_scan"] = median_s(lambda: progress(campaign, before=cut), 1)
        t0 = time.perf_counter()
        rollups.refresh()
        figures["rollup_build"] = time.perf_counter() - t0
        with psycopg.connect(url, autocommit=True) as conn:  # (as autovacuum would, soon)
            conn.execute("VACUUM ANALYZE")
        figures["board_rollup"] = median_s(board, repeats)
        figures["sliced_rollup"] = median_s(sliced_board, repeats)
        figures["progress"] = median_s(lambda: progress(campaign, before=cut), repeats)
        t0 = time.perf_counter()
        take_public_figures()
        figures["timer_figures"] = time.perf_counter() - t0
        figures["page"] = median_s(lambda: page(campaign.name), repeats)
        env = {**os.environ, "ARENA_INSTANCE_PATH": str(instance),
               "ARENA_SECRET_KEY": "bench", "ARENA_DATABASE_URL": sa_url}
        # (the analysts' default: the period's figures, as the timer took them)
        for key, live in (("rank_cli", []), ("rank_live", ["--live"])):
            figures[key] = median_s(lambda live=live: subprocess.run(
                [ARENA, "rank", "--criterion", "preference", "--intervals", "instant",
                 "--format", "json", *live], env=env, check=True, capture_output=True),
                repeats)
        figures["new"], figures["refresh"] = _refresh_new(url, cut)
        mark = db.session.get(RankingRollup, "preference")
        figures["rolled"] = db.session.scalar(
            select(func.count()).where(Vote.public_at < mark.through))
    return figures


def _refresh_new(url: str, cut) -> tuple[int, float]:
    """Time a refresh of 10,000 new votes (or half the log, when smaller): the newest ones,
    restamped after this cut-off (the next hour's)."""
    with psycopg.connect(url, autocommit=True) as conn:
        top = conn.execute("SELECT max(id) FROM vote").fetchone()[0]
        new = min(NEW_VOTES, top // 2)
        conn.execute("UPDATE vote SET created_at = %s, public_at = %s WHERE id > %s",
                     (cut + timedelta(minutes=1), cut + timedelta(minutes=1), top - new))
    db.session.execute(update(RankingRollup).values(through=cut, last_vote_id=top - new))
    db.session.commit()
    t0 = time.perf_counter()
    done = rollups.refresh(utcnow() + timedelta(hours=1))
    elapsed = time.perf_counter() - t0
    assert sum(d.votes for d in done) == new, done
    return new, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000000,20000000")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--models", type=int, default=20)
    parser.add_argument("--votes-per-voter", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3, help="runs per median (default 3)")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    name = f"arena_scale_{os.getpid()}"
    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = args.postgres.rpartition("/")
    url = f"{base}/{name}"
    sa_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        instance = scratch_dir("arena-scale-")
        app = create_app({"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench",
                          "DATABASE_URL": sa_url})
        with app.app_context():
            upgrade_schema()
            campaign = build_campaign(args.models)
            campaign_id, before = campaign.id, published.cutoff()
        print(f"PostgreSQL, {args.models} models, {args.votes_per_voter} votes per voter")
        for size in sizes:
            t0 = time.perf_counter()
            grow(url, size, args.votes_per_voter, before)
            built = time.perf_counter() - t0
            f = measure(app, url, sa_url, campaign_id, instance, args.repeats)
            print(f"\n{size:,d} votes (log grown in {built:.0f} s)")
            print(f"  GET /leaderboard, whole log      {f['board_scan'] * 1000:9.0f} ms")
            print(f"  GET /leaderboard, rollup         {f['board_rollup'] * 1000:9.0f} ms"
                  f"   (goal < 100 ms)")
            print(f"  the same, continent=EU, log      {f['sliced_scan'] * 1000:9.0f} ms")
            print(f"  the same, continent=EU, rollup   {f['sliced_rollup'] * 1000:9.0f} ms"
                  f"   (goal < 100 ms)")
            print(f"  arena rank --intervals instant   {f['rank_cli']:9.2f} s"
                  f"    (goal < 1.5 s; rollup, the period's figures)")
            print(f"  the same, --live                 {f['rank_live']:9.2f} s"
                  f"    (every vote now: agreement summed from the log)")
            print(f"  the timer's public figures       {f['timer_figures']:9.2f} s"
                  f"    (Elo, progress, lead counts, agreement)")
            print(f"  rollup built from the log        {f['rollup_build']:9.1f} s"
                  f"    ({f['rolled'] / f['rollup_build']:,.0f} votes/s)")
            print(f"  rollup refresh, {f['new']:,d} new votes "
                  f"{f['refresh'] * 1000:9.0f} ms")
            print(f"  progress figures, whole log      {f['progress_scan'] * 1000:9.0f} ms")
            print(f"  progress figures, rollup         {f['progress'] * 1000:9.0f} ms"
                  f"   (taken by the timer)")
            print(f"  GET /campaigns/<name>            {f['page'] * 1000:9.0f} ms"
                  f"   (goal < 300 ms)")
    finally:
        if os.environ.get("ARENA_BENCH_KEEP"):
            print(f"kept ARENA_DATABASE_URL={sa_url}")
        else:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()
