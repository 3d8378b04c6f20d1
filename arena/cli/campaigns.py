"""Benchmark campaigns: ``arena campaign create|publish|add-model|gold|fill-gold|status``."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import with_appcontext

from arena.campaigns import allocation, campaigns, gold, panels
from arena.campaigns.progress import progress


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


@click.group("campaign")
def campaign_group():
    """Benchmark campaigns: define, publish, add models and gold pairs, follow progress."""


@campaign_group.command("create")
@click.argument("name")
@click.option("--prompt-set", required=True,
              help="DrawBench, PartiPrompts (imported on first use) or an imported set.")
@click.option("--models", required=True, help="Comma-separated model names.")
@click.option("--criteria", help="Comma-separated criteria (default: every one, the built-in "
              "preference, coherence and alignment and EXTRA_CRITERIA's).")
@click.option("--images-per-model", default=4, show_default=True, type=int)
@click.option("--target-votes", default=26, show_default=True, type=int)
@click.option("--allocation", type=click.Choice(allocation.ALLOCATIONS), default="balanced",
              show_default=True, help="balanced: every comparison to its target; active: "
              "votes go where the ranking is unsure.")
@click.option("--early-stop/--no-early-stop", default=False, show_default=True,
              help="A model pair whose order is settled gets no more votes.")
@with_appcontext
def campaign_create_command(name, prompt_set, models, criteria, images_per_model,
                            target_votes, allocation, early_stop):
    """Define campaign NAME (it stays hidden from voters until published)."""
    campaign = campaigns.create_campaign(name, prompt_set, _names(models), _names(criteria),
                                         images_per_model, target_votes, allocation,
                                         early_stop)
    click.echo(f"Created campaign {campaign.name!r} on {campaign.prompt_set.name} with "
               f"{len(campaign.models)} models; publish it with: arena campaign publish {name}")


@campaign_group.command("publish")
@click.argument("name")
@with_appcontext
def campaign_publish_command(name):
    """Publish NAME: build its comparisons so voters see them, then make its gold pairs."""
    campaign = campaigns.get_campaign(name)
    added = campaigns.publish(campaign)
    click.echo(f"Published {name!r}: {added} comparisons added.")
    fill_gold(campaign)


@campaign_group.command("allocate")
@click.argument("name")
@click.option("--allocation", "how", type=click.Choice(allocation.ALLOCATIONS),
              help="Change how the campaign's votes are spread (default: keep it).")
@click.option("--early-stop/--no-early-stop", default=None,
              help="Change whether settled model pairs stop (default: keep it).")
@with_appcontext
def campaign_allocate_command(name, how, early_stop):
    """Decide where campaign NAME's next votes go (the rollup timer does it every few
    minutes for active and early-stopping campaigns) and say which orders are settled."""
    campaign = campaigns.get_campaign(name)
    decisions = allocation.configure(
        campaign, how or campaign.allocation,
        campaign.early_stop if early_stop is None else early_stop)
    click.echo(f"{name!r}: {campaign.allocation} allocation, early stopping "
               f"{'on' if campaign.early_stop else 'off'}")
    names = {m.id: m.name for m in campaign.models}
    for decision in decisions:
        click.echo(allocation.describe(decision, names))


@campaign_group.command("add-model")
@click.argument("name")
@click.argument("model")
@with_appcontext
def campaign_add_model_command(name, model):
    """Let MODEL join campaign NAME (only the new pairs are added)."""
    added = campaigns.add_model(campaigns.get_campaign(name), model)
    click.echo(f"{model} joined {name!r}: {added} comparisons added.")


@campaign_group.command("gold")
@click.argument("name")
@click.option("--criterion", required=True)
@click.option("--correct", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True, help="The image voters should pick.")
@click.option("--wrong", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              required=True)
@click.option("--prompt-id", type=int, help="The prompt shown (needed for alignment).")
@with_appcontext
def campaign_gold_command(name, criterion, correct, wrong, prompt_id):
    """Add a validation (gold) pair with a known right answer."""
    pair = campaigns.add_gold_pair(campaigns.get_campaign(name), criterion,
                                   correct.read_bytes(), wrong.read_bytes(), prompt_id,
                                   names=(correct.name, wrong.name))
    click.echo(f"Added gold pair {pair.id} for {criterion}.")


@campaign_group.command("fill-gold")
@click.argument("name")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Copies rendered at a time (default: one per CPU).")
@with_appcontext
def campaign_fill_gold_command(name, threads):
    """Make now every gold pair the published campaign NAME still lacks (publishing makes
    them; this finishes a supply that was interrupted)."""
    fill_gold(campaigns.get_campaign(name), threads)


def fill_gold(campaign, threads: int | None = None) -> None:
    """The campaign's whole gold supply made now, with a progress bar (a damaged copy
    takes about a quarter of a second of CPU, and a fresh campaign wants hundreds)."""
    total = sum(gold.fill_needed(campaign.id, c) for c in campaign.criteria_list)
    with click.progressbar(length=total, label="Making gold pairs") as bar:
        made = gold.fill(campaign, progress=bar.update, threads=threads)
    click.echo(", ".join(f"{criterion}: {n} made" for criterion, n in made.items())
               + f"; {sum(made.values())} gold pairs in all.")


@campaign_group.command("status")
@click.argument("name")
@with_appcontext
def campaign_status_command(name):
    """Votes collected against needed, vote rate, time to completion, voters."""
    p = progress(campaigns.get_campaign(name))
    state = "published" if p.campaign.published_at else "not published"
    click.echo(f"{p.campaign.name} ({state}): {p.votes_total:,d} of {p.needed_total:,d} votes")
    for c in p.criteria:
        placed = ", ".join(f"{name} #{place}" for place, name in c.get("placed", []))
        settled = {True: "; order settled" + (", voting stopped" if p.campaign.early_stop else ""),
                   False: f"; order not settled yet, about {c.get('to_settle', 0):,d} more "
                          "votes" + (f"; places settled: {placed}" if placed else "")
                   }.get(c.get("settled"), "")
        click.echo(f"  {c['criterion']:<11} {c['collected']:>8,d} / {c['needed']:,d} "
                   f"over {c['comparisons']:,d} comparisons, {c['skipped']:,d} skipped"
                   + settled)
    rate = f"{p.votes_per_hour:.1f} votes/hour" if p.votes_per_hour else "no votes in 24 h"
    eta = f", about {p.eta_hours:.1f} h to go" if p.eta_hours is not None else ""
    if p.campaign.early_stop and p.criteria and all(c.get("settled") for c in p.criteria):
        eta = ", voting stopped: every order settled"
    click.echo(f"  {rate}{eta}; {p.voters} voters; gold pairs passed by "
               f"{p.validation['passed']} of {p.validation['voters']} voters who met one")
    for flag, votes, voters in p.not_counted:
        click.echo(f"  not counted: {votes:,d} votes {flag} from {voters:,d} voters")
    waits = {"trust": "until their voters earn trust", "review": "on a cohort review"}
    for why, votes, voters in p.waiting:
        click.echo(f"  waiting {waits[why]}: {votes:,d} votes from {voters:,d} voters")
    if p.campaign.admission == "panel":
        click.echo(f"  panel: {panels.completed_count(p.campaign)} participants completed "
                   f"{p.campaign.panel_tasks} answers")


@campaign_group.command("panel")
@click.argument("name")
@click.option("--platform", type=click.Choice(list(panels.PLATFORMS)), default="prolific",
              show_default=True, help="Whose link conventions the join link follows.")
@click.option("--code", "completion_code", help="The completion code participants get.")
@click.option("--tasks", default=30, show_default=True, type=int,
              help="Answers each participant gives before the code.")
@click.option("--return-url", help="Where to send participants when done; {code} is filled "
              "in (Prolific: https://app.prolific.com/submissions/complete?cc={code}).")
@click.option("--base-url", default="http://127.0.0.1:5000", show_default=True,
              help="This server's public address, for the join link.")
@click.option("--close", is_flag=True, help="Back to open admission.")
@with_appcontext
def campaign_panel_command(name, platform, completion_code, tasks, return_url, base_url,
                           close):
    """Admit only a recruited panel's participants to NAME, and print the join link."""
    campaign = campaigns.get_campaign(name)
    if close:
        panels.close_panel(campaign)
        click.echo(f"{name!r} is open to everyone again.")
        return
    panels.open_panel(campaign, completion_code, tasks=tasks, return_url=return_url)
    click.echo(f"{name!r} now admits panel participants only ({tasks} answers each, "
               f"completion code {completion_code}). Study link for {platform}:")
    click.echo(panels.join_link(campaign, base_url, platform))


COMMANDS = (campaign_group,)
