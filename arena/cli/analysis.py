"""Rankings and the vote log on the command line: ``arena rank``, ``arena elo replay`` and
``arena votes export``."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import click
from flask.cli import with_appcontext

from arena.analysis import formats, methods


@click.command("rank")
@click.option("--criterion", help="Criterion to rank: preference, coherence, alignment or "
              "one of EXTRA_CRITERIA (required unless --votes is given).")
@click.option("--votes", "votes_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="Rank an external CSV, JSON lines or Parquet file of "
              "left,right,winner votes.")
@click.option("--method", type=click.Choice(list(methods.METHODS)), default=methods.DEFAULT,
              show_default=True)
@click.option("--bootstrap", "rounds", type=click.IntRange(0, 100_000),
              help="Bootstrap rounds for the 95% intervals (default 1000; 0: none); given "
              "alone, asks for bootstrap intervals.")
@click.option("--intervals", type=click.Choice(["instant", "bootstrap"]),
              help="95% intervals from the sandwich variance (the default: what the "
              "leaderboard page shows), or by bootstrap (two ways: Owen's pigeonhole "
              "bootstrap with the sandwich's spread).")
@click.option("--cluster", type=click.Choice(["voter+prompt", "voter", "prompt", "none"]),
              help="What the intervals resample: voters and prompts at once (default; with "
              "--votes, the file's voter and prompt columns that vary), voters, prompts, or "
              "none (single votes).")
@click.option("--margin", "margins", multiple=True, metavar="ATTRIBUTE[:CAT=SHARE,...]",
              help="Reweight to population margins (repeatable: raking): continent, age_group "
              "or gender with default world shares, or your own, e.g. "
              "gender:female=0.5,male=0.5.")
@click.option("--weights", type=click.Choice(["reliability", "gold"]),
              help="Weight each voter's votes by the probability that they looked at the "
              "images, from their agreement with the crowd and their gold answers "
              "(reliability: blind tappers and scripts count for little, but so would a "
              "minority of another taste; the table says when) or from their gold answers "
              "alone (gold: no taste taken for blindness, weaker where gold is sparse). "
              "Bradley-Terry, intervals by voter.")
@click.option("--ties", type=click.Choice(["half", "davidson"]), default="half",
              show_default=True, help="With --votes: count a tie as half a win each way, or "
              "fit Davidson's tie model (bootstrap intervals, ties drawn as ties).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--format", "fmt", type=click.Choice(list(formats.RANKING)), default="table",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file (required for parquet).")
@click.option("--campaign", help="Only the votes on this campaign's pairs (its models alone).")
@click.option("--age-group")
@click.option("--gender")
@click.option("--continent")
@click.option("--country")
@click.option("--category", help="Prompt category.")
@click.option("--language", help="Votes cast on pages in this language (en, es, ...).")
@click.option("--since", type=click.DateTime(), help="Votes at or after this UTC time.")
@click.option("--until", type=click.DateTime(), help="Votes before this UTC time.")
@click.option("--trusted-only", is_flag=True, help="Only voters who passed validation.")
@click.option("--include-flagged", is_flag=True,
              help="Count the votes that do not count by default (too fast, distrusted).")
@click.option("--poststratify", is_flag=True, help="Same as --margin continent.")
@click.option("--live", is_flag=True,
              help="Every vote to the second, before the farm screen and trust (by "
              "default, the votes counted in public figures as of the last screen).")
@click.option("--by", type=click.Choice(["prompt"]),
              help="A ranking per prompt: each prompt's strengths shrunk toward the overall "
              "order (Bradley-Terry, empirical Bayes over the prompts), with 95% intervals.")
@with_appcontext
def rank_command(criterion, votes_file, method, rounds, intervals, cluster, margins, weights,
                 ties, seed, fmt, output, poststratify, live, by, **slice_options):
    """Rank models with Bradley-Terry or Elo, with 95% intervals and rank sets: by default
    from the votes counted in public figures as of the rollup timer's last screen (what the
    public pages show, trust earned and farms held out); --live counts every vote now."""
    import numpy as np

    from arena.analysis import exports, published
    from arena.analysis.leaderboard import LIVE_WARNING, rank_models, rank_votes_file
    from arena.analysis.tallies import Slice

    if formats.RANKING[fmt].binary and output is None:
        raise click.UsageError(f"--format {fmt} needs --output FILE")
    rng = np.random.default_rng(seed)
    intervals = intervals or ("instant" if rounds is None else "bootstrap")
    rounds = 1000 if rounds is None else rounds
    sliced = any(v not in (None, False) for v in slice_options.values())
    if votes_file is not None:
        if sliced or poststratify or margins or weights or by:
            raise click.UsageError("slice options, margins, weights and --by apply to the "
                                   "database only")
        ranking = rank_votes_file(votes_file, ties=ties, rounds=rounds, rng=rng,
                                  intervals=intervals, cluster=cluster, method=method)
    elif criterion is None:
        raise click.UsageError("give --criterion (or --votes FILE)")
    else:
        as_of = None if live else published.shown_cutoff()
        slice_ = Slice(**slice_options, as_of=as_of)
        if by == "prompt":
            from arena.analysis.per_prompt import rank_by_prompt

            if method != methods.DEFAULT or margins or poststratify or weights:
                raise click.UsageError("--by prompt ranks with Bradley-Terry over the votes as "
                                       "cast: no --method, margins or weights")
            ranking = rank_by_prompt(criterion, slice_)
        else:
            ranking = rank_models(criterion, method=method, rounds=rounds, rng=rng,
                                  slice_=slice_, intervals=intervals,
                                  cluster=cluster or "voter+prompt", margins=margins,
                                  poststratify=poststratify, weights=weights)
        if live:
            ranking.flags.insert(0, LIVE_WARNING)
        else:
            click.echo(f"as of {as_of:%Y-%m-%d %H:%M} UTC: the votes counted in public "
                       "figures at the last screen (--live: every vote now)", err=True)
    if by == "prompt":
        from arena.analysis.per_prompt import write

        _write(write(ranking, fmt), len(ranking.rows), ranking.flags, fmt, output)
    else:
        _write(exports.write_ranking(ranking, fmt), len(ranking.models), ranking.flags, fmt,
               output)


def _write(written: str | bytes, rows: int, flags: list[str], fmt: str,
           output: Path | None) -> None:
    """A written table to stdout or ``output``; its flags to stderr where the text table,
    which carries them, is not what is shown."""
    if output is None:
        click.echo(written, nl=False)
    elif isinstance(written, bytes):
        output.write_bytes(written)
    else:
        output.write_text(written)
    if output is not None:
        click.echo(f"Wrote {rows} rows to {output}", err=True)
    for flag in flags if fmt != "table" else ():
        click.echo(f"warning: {flag}", err=True)


@click.group("elo")
def elo_group():
    """Online Elo ratings."""


@elo_group.command("replay")
@with_appcontext
def elo_replay_command():
    """Recompute online Elo and vote counters from the vote log, in vote-id order."""
    from arena.voting.votes import replay, vote_count

    with click.progressbar(length=vote_count(), label="Replaying votes") as bar:
        counts = replay(progress=bar.update)
    for criterion, n in counts.items():
        click.echo(f"{criterion}: {n} votes replayed")


@click.group("votes")
def votes_group():
    """The vote log."""


@votes_group.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@with_appcontext
def export_votes_command(folder):
    """Write the vote log under FOLDER (new or empty) as a Parquet dataset partitioned by
    campaign, criterion and month, streamed from one snapshot with flat memory. Read it as
    one table: DuckDB read_parquet('FOLDER/**/*.parquet', hive_partitioning=true), pandas
    read_parquet('FOLDER'), pyarrow.dataset.dataset('FOLDER', partitioning='hive')."""
    from arena.analysis import exports

    with click.progressbar(length=exports.vote_count(), label="Writing votes") as bar:
        written = exports.votes_dataset(folder, progress=bar.update)
    click.echo(f"{written:,d} votes written under {folder}")


@votes_group.command("rollup")
@with_appcontext
def rollup_votes_command():
    """The period's tick: add the votes counted since the last run to the rollups, up to the
    public pages' cut-off, so rankings and public counts of every vote read them instead of
    the whole log; once a period hold out the voters who favour one model together beyond
    the crowd ('arena votes suspects') and test the cohorts of new voters ('arena votes
    cohorts'; SCREEN_HOLDS); turn pairs the crowd has settled into gold; take the period's
    public figures (the online Elo, the campaign list, each published campaign's progress,
    the lead counts) if no page has yet; and decide where active and early-stopping
    campaigns' next votes go. Run it from a timer (every few minutes); it is idempotent and
    safe to run twice at once."""
    from arena.analysis import rollups
    from arena.campaigns import period

    with click.progressbar(length=rollups.pending(), label="Rolling up votes") as bar:
        done = period.tick(progress=lambda _criterion, votes: bar.update(votes))
    added = {}
    for step in done.rolled:
        added[step.criterion] = added.get(step.criterion, 0) + step.votes
        through = step.through
    for criterion, votes in added.items():
        click.echo(f"{criterion}: {votes:,d} votes added, rolled up to "
                   f"{through:%Y-%m-%d %H:%M:%S}")
    if done.screened is not None:
        held = done.screened.held
        click.echo(f"the farm screen held out {len(held):,d} voters this period"
                   + (f": {', '.join(held)}" if held else ""))
        if done.screened.reviews:
            click.echo(f"cohort reviews opened: {', '.join(map(str, done.screened.reviews))} "
                       "(arena votes cohorts)")
    for name, turned in done.consensus.items():
        click.echo(f"{name!r}: pairs the crowd settled turned gold: "
                   + ", ".join(f"{criterion} {n}" for criterion, n in turned.items() if n))
    click.echo(f"this period's public figures taken: the online Elo, the campaign list and "
               f"{done.campaigns:,d} campaigns' progress")
    for name, decisions in done.allocations:
        if not decisions:
            click.echo(f"{name!r}: allocation kept (fewer than ALLOCATION_BUDGET new votes "
                       "per criterion since it was decided)")
            continue
        opened = sum(decision.opened for decision in decisions)
        settled = [d.criterion for d in decisions if d.allocation.done]
        click.echo(f"{name!r}: {opened:,d} comparisons open"
                   + (f"; settled: {', '.join(settled)}" if settled else ""))


@votes_group.command("suspects")
@click.option("--criterion", default="preference", show_default=True,
              help="preference, coherence, alignment or one of EXTRA_CRITERIA.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.01, show_default=True,
              help="Chance that a crowd voting as it likes has a model flagged.")
@click.option("--hold", is_flag=True,
              help="Hold the voters listed out of every ranking (their votes, past and to "
              "come, flagged held; the rollups built again, the Elo replayed).")
@with_appcontext
def suspects_command(criterion, alpha, hold):
    """Voters who favour one model beyond what the crowd's strengths predict, together (a
    farm's identities voting their model up, or the voters of one network), most extreme
    first: their public id, votes, the model and how far (z, about standard normal for a
    voter like the crowd), and their gold answers; then voters who choose one side of the
    screen far beyond chance (the side, and its z)."""
    from arena.analysis import suspects as screen

    found = screen.suspects(criterion, alpha=alpha)
    click.echo(f"{len(found):,d} voters favour a model beyond the crowd ({criterion}, "
               f"alpha {alpha:g})")
    if found:
        click.echo(f"{'voter':34} {'votes':>6}  {'model':24} {'z':>6}  gold right/wrong")
    for s in found:
        what = f"always the {s.side} image" if s.side else s.model[:24]
        click.echo(f"{s.public_id:34} {s.votes:>6,d}  {what:24} {s.z:6.1f}  "
                   f"{s.gold_passed}/{s.gold_failed}"
                   + ("  (with their network's voters)" if s.network else ""))
    if hold and found:
        _held(partial(screen.hold, reasons={s.public_id: f"{criterion}: {s.reason}"
                                            for s in found}),
              [s.public_id for s in found], "held out")


@votes_group.command("release")
@click.argument("voters", nargs=-1, required=True)
@with_appcontext
def release_command(voters):
    """Count the votes of these held voters (public ids) again."""
    from arena.analysis import suspects as screen

    _held(screen.release, voters, "released")


@votes_group.command("keep-out")
@click.argument("voters", nargs=-1, required=True)
@with_appcontext
def keep_out_command(voters):
    """Review these holds (public ids): the voters stay out, off the review queue."""
    from arena.analysis.suspects import keep_out

    click.echo(f"{keep_out(voters):,d} holds reviewed: kept out")


@votes_group.command("cohorts")
@click.option("--all", "every", is_flag=True, help="Decided reviews too.")
@with_appcontext
def cohorts_command(every):
    """Cohort reviews: voters new together (first seen in a period, a day or a week, or
    counted from one period) whose votes moved the public ranking beyond what voters like
    the crowd would. The fewest of them that take the cohort back under the line wait out of
    public figures until released ('arena votes cohort-release ID') or kept out
    ('arena votes cohort-keep-out ID')."""
    from arena.analysis import cohorts

    rows = cohorts.reviews(open_only=not every)
    click.echo(f"{len(rows):,d} cohort reviews{'' if every else ' to decide'}")
    for r in rows:
        decided = f"  {r.decision} {r.decided_at:%Y-%m-%d %H:%M}" if r.decided_at else ""
        click.echo(f"#{r.id} {r.criterion} {r.kind} cohort to {r.until:%Y-%m-%d %H:%M}: "
                   f"{r.voters:,d} voters ({r.votes:,d} votes) wait{decided}\n  {r.reason}")
        moved = [s for s in r.evidence["statistics"] if s["kind"] == "gap"]
        if moved:
            click.echo("  gaps moved: " + ", ".join(
                f"{s['models'][0]} over {s['models'][1]} {s['elo']:+.0f} Elo (z {s['z']:.1f})"
                for s in moved))


@votes_group.command("cohort-release")
@click.argument("review", type=int)
@with_appcontext
def cohort_release_command(review):
    """Count the votes of a cohort review's waiting voters again (from now)."""
    from arena.analysis import cohorts

    click.echo(f"{cohorts.release(review):,d} voters released: their votes count from the "
               "next period")


@votes_group.command("cohort-keep-out")
@click.argument("review", type=int)
@with_appcontext
def cohort_keep_out_command(review):
    """Hold a cohort review's waiting voters out (as the farm screen holds)."""
    from arena.analysis import cohorts

    _held(lambda ids, progress: cohorts.keep_out(ids[0], progress), [review],
          "held out (kept out with the review)")


@votes_group.command("held")
@with_appcontext
def held_command():
    """The voters held out of the rankings: their votes, since when, why, and whether an
    operator reviewed the hold."""
    from arena.analysis.suspects import held

    rows = held()
    click.echo(f"{len(rows):,d} voters held out, {sum(not r.reviewed_at for r in rows):,d} "
               "to review")
    for row in rows:
        kept = f"  kept out {row.reviewed_at:%Y-%m-%d %H:%M}" if row.reviewed_at else ""
        click.echo(f"{row.public_id:34} {row.votes:>8,d} votes  held {row.held_at:%Y-%m-%d %H:%M}"
                   f"  {row.reason or 'by an operator'}{kept}")


def _held(change, voters, done: str) -> None:
    from arena.voting.votes import vote_count

    with click.progressbar(length=vote_count(), label="Replaying votes") as bar:
        changed = change(voters, progress=bar.update)
    click.echo(f"{changed:,d} voters {done}; rollups will be built again by the next "
               "'arena votes rollup'")


COMMANDS = (rank_command, elo_group, votes_group)
