"""`arena rank` over millions of stored votes, on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/rank_db.py [--votes 2000000] [--postgres URL]
                                           [--paired-progress REV]

Builds a throwaway database: 282 prompts x 4 models x 4 images (the source benchmark's size),
then ``--votes`` preference votes inserted with INSERT ... SELECT. Prints the time of the SQL
aggregation, of ``rank_models`` with 1,000 bootstrap rounds, and of the whole ``arena rank``
command as a user runs it (a new process: interpreter start and imports included); then
what the public pages cost, counted to the hour's cut-off (see ``public_pages``).
``--paired-progress REV`` times a campaign's progress page as git revision REV computed it
(its ``arena/campaigns/progress.py``) against the current code, by turns on the same
database (three rounds each, to the cut-off and live), and prints the medians and ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
from harness import median_s, scratch_dir
from sqlalchemy import func, select, update
from synthetic import fill_votes, grow_campaign, settle

from arena import create_app
from arena.analysis import published
from arena.analysis.leaderboard import rank_models
from arena.analysis.tallies import tally, win_matrix
from arena.campaigns.campaigns import _totals
from arena.campaigns.progress import progress
from arena.extensions import db
from arena.infra.instance import upgrade_schema
from arena.models import Campaign, Comparison, GenModel, PromptSet, Vote, utcnow
from arena.voting.live_elo import elo_params, replayed
from arena.voting.votes import ensure_ratings

ARENA = str(Path(sys.executable).with_name("arena"))


def run(label: str, instance: Path, url: str | None, n_votes: int,
        paired: str | None = None) -> None:
    config = {"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench"}
    if url:
        config["DATABASE_URL"] = url
    app = create_app(config)
    with app.app_context():
        upgrade_schema()
        models = [GenModel(name=f"model-{k}") for k in range(4)]
        db.session.add_all(models)
        db.session.commit()
        ensure_ratings([m.id for m in models])
        db.session.commit()
        t0 = time.perf_counter()
        grow_campaign(282, criteria=("preference",))
        total = fill_votes(n_votes)
        settle("vote")  # (without statistics the planner expected 17 rows and sorted 2M on disk)
        build = time.perf_counter() - t0
        t_agg = median_s(lambda: win_matrix("preference"))
        t_voter = median_s(lambda: tally("preference"))
        t_rank = median_s(lambda: rank_models("preference", rounds=1000,
                                              rng=np.random.default_rng(0)), 1)
        public = public_pages()
        compared = paired_progress(paired) if paired else None
    env = {**os.environ, "ARENA_INSTANCE_PATH": str(instance), "ARENA_SECRET_KEY": "bench"}
    if url:
        env["ARENA_DATABASE_URL"] = url
    cli = median_s(lambda: subprocess.run(
        [ARENA, "rank", "--criterion", "preference", "--format", "json"], env=env,
        check=True, capture_output=True), 3)
    print(f"\n{label}: {total:,d} stored votes (built in {build:.0f} s)")
    print(f"  SQL aggregation (GROUP BY winner, loser)   {t_agg * 1000:8.0f} ms")
    print(f"  per voter (GROUP BY voter, winner, loser)  {t_voter * 1000:8.0f} ms  "
          f"ratio {t_voter / t_agg:.1f}x")
    print(f"  rank_models, 1000 rounds resampling voters {t_rank * 1000:8.0f} ms")
    print(f"  `arena rank --criterion preference`, whole command, median of 3: "
          f"{cli:.2f} s (target < 1.5 s)")
    ms = {k: v * 1000 for k, v in public.items()}
    print("  public pages (votes before the hour's cut-off, arena.analysis.published):")
    print(f"    leaderboard page's fit: live {ms['live']:.0f} ms, to the cut-off "
          f"{ms['cut']:.0f} ms (ratio {public['cut'] / public['live']:.2f}x); the hour's "
          f"first request {ms['first']:.0f} ms")
    print(f"    the hour's first request: the public Elo (the whole log in its keyed order) "
          f"{ms['whole']:.0f} ms, the live Elo replayed in arrival order "
          f"{ms['arrival']:.0f} ms (ratio {public['whole'] / public['arrival']:.2f}x)")
    print(f"    a campaign's progress page to the cut-off {ms['progress']:.0f} ms (live "
          f"{ms['progress_live']:.0f} ms); the campaign list's totals {ms['list']:.0f} ms")
    for line in compared or ():
        print(f"    {line}")


def paired_progress(rev: str) -> list[str]:
    """The progress page of git revision ``rev`` against the current one, by turns (ABBA),
    on the campaign public_pages made: lines to print."""
    source = subprocess.run(["git", "show", f"{rev}:arena/campaigns/progress.py"],
                            check=True, capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout
    path = scratch_dir("arena-progress-") / "progress_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("progress_then", path)
    then = importlib.util.module_from_spec(spec)
    sys.modules["progress_then"] = then  # (its dataclasses look their module up)
    spec.loader.exec_module(then)
    campaign = db.session.scalar(select(Campaign).where(Campaign.name == "bench"))
    cut = published.cutoff()
    times: dict[tuple[str, str], list[float]] = {}
    for turn in range(3):
        order = (("then", then.progress), ("now", progress))
        for who, fn in order if turn % 2 == 0 else order[::-1]:
            for count, before in (("to the cut-off", cut), ("live", None)):
                t0 = time.perf_counter()
                fn(campaign, before=before)
                times.setdefault((who, count), []).append(time.perf_counter() - t0)
                db.session.rollback()
    lines = []
    for count in ("to the cut-off", "live"):
        a, b = (statistics.median(times[(who, count)]) for who in ("then", "now"))
        lines.append(f"progress page {count}: {rev} {a * 1000:.0f} ms, now {b * 1000:.0f} ms "
                     f"(medians of 3 by turns; {a / b:.2f}x faster)")
    return lines


def public_pages() -> dict[str, float]:
    """What the public pages cost (arena.analysis.published): the leaderboard page's fit
    (instant intervals, as /leaderboard) live and to the hour's cut-off; the work of the
    hour's first request: the public Elo (the whole log in its keyed order) beside the live
    Elo's replay in arrival order; a campaign's progress page and
    the campaign list, counted to the cut-off. The votes are moved to yesterday but for the
    last 20,000, put in the hour after the cut-off; the comparisons go to one campaign."""
    cut = published.cutoff()
    last = db.session.scalar(select(func.max(Vote.id))) - 20_000
    db.session.execute(update(Vote).where(Vote.id <= last)
                       .values(created_at=cut - timedelta(days=1),
                               public_at=cut - timedelta(days=1)))
    db.session.execute(update(Vote).where(Vote.id > last)
                       .values(created_at=cut + timedelta(minutes=1),
                               public_at=cut + timedelta(minutes=1)))
    prompt_set = db.session.scalar(select(PromptSet.id).order_by(PromptSet.id.desc()))
    campaign = Campaign(name="bench", prompt_set_id=prompt_set, criteria="preference",
                        published_at=utcnow())
    db.session.add(campaign)
    db.session.flush()
    db.session.execute(update(Comparison).values(campaign_id=campaign.id))
    db.session.commit()
    for table in ("vote", "comparison"):  # (2M rows rewritten: statistics, visibility map;
        settle(table)  # without them PostgreSQL's progress page took 31 s, after them 2)

    def board(public: bool):
        return rank_models("preference", intervals="instant", include_idle=False,
                           public=public)

    published.forget()
    t0 = time.perf_counter()
    board(True)
    first = time.perf_counter() - t0
    return {"whole": median_s(lambda: published._elo_before(cut), 1),
            "arrival": median_s(lambda: replayed("preference", elo_params()), 1),
            "live": median_s(lambda: board(False)), "cut": median_s(lambda: board(True)),
            "first": first,
            "progress": median_s(lambda: progress(campaign, before=cut), 1),
            "progress_live": median_s(lambda: progress(campaign), 1),
            "list": median_s(lambda: _totals(cut), 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--votes", type=int, default=2_000_000)
    parser.add_argument("--postgres", help="an empty PostgreSQL database URL")
    parser.add_argument("--paired-progress", metavar="REV",
                        help="time the progress page of git revision REV against this one")
    args = parser.parse_args()
    run("SQLite", scratch_dir("arena-rankdb-"), None, args.votes, args.paired_progress)
    if args.postgres:
        run("PostgreSQL", scratch_dir("arena-rankdb-pg-"), args.postgres,
            args.votes, args.paired_progress)


if __name__ == "__main__":
    main()
