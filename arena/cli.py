"""The ``arena`` command group: thin click wrappers over service functions.

Also available as ``flask --app wsgi <command>``. Flask-Migrate adds ``arena db ...``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import click
from flask import Flask, current_app
from flask.cli import FlaskGroup, with_appcontext


def ensure_instance() -> Path:
    """Create the instance folder and a persistent secret key if missing; returns the folder.

    Every server process must sign cookies with the same key, so it cannot be random per
    process; it is written once to ``instance/config.py`` (not in git)."""
    instance = Path(current_app.instance_path)
    instance.mkdir(parents=True, exist_ok=True)
    config_file = instance / "config.py"
    if current_app.config.get("SECRET_KEY_EPHEMERAL") and "ARENA_SECRET_KEY" not in os.environ:
        text = config_file.read_text() if config_file.exists() else ""
        if "SECRET_KEY" not in text:
            with config_file.open("a") as fh:
                fh.write(f"SECRET_KEY = {secrets.token_hex(32)!r}\n")
            os.chmod(config_file, 0o600)
            click.echo(f"Wrote a new secret key to {config_file}")
    return instance


def upgrade_database() -> None:
    from flask_migrate import upgrade

    ensure_instance()
    upgrade()


@click.command("demo")
@click.option("--prompts", "n_prompts", type=click.IntRange(1, 200), default=None,
              help="Prompts with images (default: DEMO_PROMPTS, 24).")
@click.option("--images", "n_images", type=click.IntRange(1, 8), default=None,
              help="Images per model and prompt (default 4).")
@click.option("--votes", "n_votes", type=click.IntRange(0, 1_000_000), default=400,
              show_default=True, help="Simulated crowd votes cast through the real services, "
              "so the leaderboard has data (0: none).")
@with_appcontext
def demo_command(n_prompts, n_images, n_votes):
    """Create the database and load the demo campaign (does nothing if already loaded)."""
    from . import demo

    upgrade_database()
    if demo.demo_loaded():
        click.echo("Demo campaign already loaded.")
        return
    cfg = current_app.config
    total = (n_prompts or cfg["DEMO_PROMPTS"]) * len(demo.DEMO_MODELS) * (
        n_images or cfg["DEMO_IMAGES_PER_MODEL"]
    )
    with click.progressbar(length=total, label="Drawing demo images") as bar:
        counts = demo.load_demo(n_prompts, n_images, progress=lambda _step, n: bar.update(n))
    click.echo(", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items()))
    if n_votes:
        import numpy as np

        with click.progressbar(length=n_votes, label="Simulating crowd votes") as bar:
            cast = demo.simulate_votes(n_votes, np.random.default_rng(2026), progress=bar.update)
        click.echo(f"{cast} simulated votes cast")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--workers", default=2, show_default=True, type=int)
@with_appcontext
def serve_command(host, port, workers):
    """Serve the app with gunicorn (upgrading the database schema first)."""
    from gunicorn.app.base import BaseApplication

    from . import create_app

    upgrade_database()

    class Server(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"{host}:{port}")
            self.cfg.set("workers", workers)
            self.cfg.set("accesslog", "-")
            self.cfg.set("forwarded_allow_ips", os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"))

        def load(self):
            return create_app()

    click.echo(f"Arena is running at http://{host}:{port}  (Ctrl+C to stop)")
    Server().run()


@click.command("import-prompts")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", help="Prompt set name (default: the file name without extension).")
@with_appcontext
def import_prompts_command(path, name):
    """Import a prompt set from a CSV/TSV (Prompt, Category columns) or JSON lines file."""
    from .prompts import PromptFileError, import_prompts, read_prompt_file

    try:
        total = sum(1 for _ in read_prompt_file(path))
        with click.progressbar(length=total, label=f"Importing {path.name}") as bar:
            prompt_set = import_prompts(path, name=name, progress=bar.update)
    except (PromptFileError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Imported {total} prompts into set {prompt_set.name!r} (id {prompt_set.id}).")


@click.group("elo")
def elo_group():
    """Online Elo ratings."""


@elo_group.command("replay")
@with_appcontext
def elo_replay_command():
    """Recompute online Elo and vote counters from the vote log, in vote-id order."""
    from .voting import replay, vote_count

    with click.progressbar(length=vote_count(), label="Replaying votes") as bar:
        counts = replay(progress=bar.update)
    for criterion, n in counts.items():
        click.echo(f"{criterion}: {n} votes replayed")


@click.command("rank")
@click.option("--criterion", type=click.Choice(["preference", "coherence", "alignment"]),
              help="Criterion to rank (required unless --votes is given).")
@click.option("--votes", "votes_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="Rank an external CSV/JSONL file of left,right,winner votes.")
@click.option("--method", type=click.Choice(["bt", "elo"]), default="bt", show_default=True)
@click.option("--bootstrap", "rounds", type=click.IntRange(0, 100_000), default=1000,
              show_default=True, help="Bootstrap rounds for the 95% intervals (0: none).")
@click.option("--intervals", type=click.Choice(["bootstrap", "fisher"]), default="bootstrap",
              show_default=True, help="95% intervals by bootstrap or from the Fisher "
              "information (instant).")
@click.option("--ties", type=click.Choice(["half", "davidson"]), default="half",
              show_default=True, help="With --votes: count a tie as half a win each way, or "
              "fit Davidson's tie model (no intervals).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]),
              default="table", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file (required for parquet).")
@click.option("--age-group")
@click.option("--gender")
@click.option("--continent")
@click.option("--country")
@click.option("--category", help="Prompt category.")
@click.option("--since", type=click.DateTime(), help="Votes at or after this UTC time.")
@click.option("--until", type=click.DateTime(), help="Votes before this UTC time.")
@click.option("--trusted-only", is_flag=True, help="Only voters who passed validation.")
@click.option("--poststratify", is_flag=True,
              help="Reweight votes so continents count by world population share.")
@with_appcontext
def rank_command(criterion, votes_file, method, rounds, intervals, ties, seed, fmt, output,
                 poststratify, **slice_options):
    """Rank models with Bradley-Terry (95% bootstrap intervals) or Elo."""
    import numpy as np

    from . import export
    from .rankings import RankingError, Slice, rank_davidson, rank_matrix, rank_models
    from .vote_files import VoteFileError, read_votes

    if fmt == "parquet" and output is None:
        raise click.UsageError("--format parquet needs --output FILE")
    rng = np.random.default_rng(seed)
    try:
        if votes_file is not None:
            if (any(v not in (None, False) for v in slice_options.values()) or method != "bt"
                    or poststratify):
                raise click.UsageError("--votes ranks a file with Bradley-Terry; slice options "
                                       "and --method elo apply to the database only")
            votes = read_votes(votes_file)
            if ties == "davidson":
                ranking = rank_davidson(votes.names, *votes.split())
            else:
                ranking = rank_matrix(votes.names, votes.win_matrix(), rounds=rounds, rng=rng,
                                      intervals=intervals)
        else:
            if criterion is None:
                raise click.UsageError("give --criterion (or --votes FILE)")
            ranking = rank_models(criterion, method=method, rounds=rounds, rng=rng,
                                  slice_=Slice(**slice_options), intervals=intervals,
                                  poststratify=poststratify)
    except (RankingError, VoteFileError) as exc:
        raise click.ClickException(str(exc)) from exc
    if fmt == "parquet":
        output.write_bytes(export.to_parquet(ranking))
        click.echo(f"Wrote {len(ranking.models)} rows to {output}", err=True)
        return
    text = {"table": export.to_table, "csv": export.to_csv, "json": export.to_json}[fmt](ranking)
    if output is not None:
        output.write_text(text)
        click.echo(f"Wrote {len(ranking.models)} rows to {output}", err=True)
    else:
        click.echo(text, nl=False)
    for flag in ranking.flags if fmt != "table" else ():
        click.echo(f"warning: {flag}", err=True)


@click.group("token")
def token_group():
    """Analyst API tokens (for /api/v1 exports)."""


@token_group.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["analyst", "operator"]), default="analyst",
              show_default=True, help="analyst: exports; operator: the /admin pages.")
@with_appcontext
def token_create_command(name, role):
    """Create a token; it is printed once and only its hash is kept."""
    from .tokens import TokenError, create_token

    try:
        token = create_token(name, role=role)
    except TokenError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Token for {name!r} (store it now, it cannot be shown again):", err=True)
    click.echo(token)


@token_group.command("revoke")
@click.argument("name")
@with_appcontext
def token_revoke_command(name):
    """Revoke the active token called NAME."""
    from .tokens import TokenError, revoke_token

    try:
        revoke_token(name)
    except TokenError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Revoked {name!r}.")


@token_group.command("list")
@with_appcontext
def token_list_command():
    """List tokens (names and dates, never the tokens)."""
    from .tokens import list_tokens

    for row in list_tokens():
        state = f"revoked {row.revoked_at:%Y-%m-%d}" if row.revoked_at else "active"
        click.echo(f"{row.name}\t{row.role}\tcreated {row.created_at:%Y-%m-%d}\t{state}")


@click.group("owner")
def owner_group():
    """Model owner accounts."""


@owner_group.command("create")
@click.argument("name")
@with_appcontext
def owner_create_command(name):
    """Create an owner; prints their API token once (only its hash is kept)."""
    from .owners import OwnerError, create_owner

    try:
        token = create_owner(name)
    except OwnerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Token for owner {name!r} (give it to them now, it cannot be shown again):",
               err=True)
    click.echo(token)


@owner_group.command("revoke")
@click.argument("name")
@with_appcontext
def owner_revoke_command(name):
    """Revoke an owner's token (their models and images stay)."""
    from .owners import OwnerError, revoke_owner

    try:
        revoke_owner(name)
    except OwnerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Revoked owner {name!r}.")


@click.group("model")
def model_group():
    """Models taking part."""


@model_group.command("create")
@click.argument("name")
@click.option("--owner", "owner_name", required=True, help="The owner's name.")
@click.option("--description")
@click.option("--link")
@with_appcontext
def model_create_command(name, owner_name, description, link):
    """Register model NAME for an owner."""
    from sqlalchemy import select

    from .extensions import db
    from .models import Owner
    from .owners import OwnerError, register_model

    owner = db.session.scalar(select(Owner).where(Owner.name == owner_name))
    if owner is None:
        raise click.ClickException(f"no owner named {owner_name!r}")
    try:
        model = register_model(owner, name, description, link)
    except OwnerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Registered model {model.name!r} (id {model.id}) for {owner_name!r}.")


@click.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--model", "model_name", required=True, help="The model the images belong to.")
@with_appcontext
def import_command(source, model_name):
    """Import a model's images from a folder or a .zip.

    With a manifest.csv (columns prompt_id,path) the files it lists are imported; without
    one, files named <prompt_id>_<n>.png (or .jpg, .webp). Good files are kept, bad ones
    listed with their reason; the exit code is 1 if any file was refused.
    """
    from sqlalchemy import select

    from .extensions import db
    from .ingest import ManifestError, ingest_batch, items_from_folder, items_from_zip
    from .models import GenModel

    model = db.session.scalar(select(GenModel).where(GenModel.name == model_name))
    if model is None:
        raise click.ClickException(f"no model named {model_name!r} (arena model create)")
    try:
        items = list(items_from_folder(source) if source.is_dir() else items_from_zip(source))
    except ManifestError as exc:
        raise click.ClickException(str(exc)) from exc
    with click.progressbar(length=len(items), label=f"Importing into {model_name}") as bar:
        results = ingest_batch(model, items, progress=lambda _r: bar.update(1))
    accepted = [r for r in results if r.ok and not r.duplicate]
    duplicates = [r for r in results if r.duplicate]
    refused = [r for r in results if not r.ok]
    for r in refused:
        click.echo(f"refused  {r.filename}: {r.reason}", err=True)
    click.echo(f"{len(accepted)} accepted, {len(duplicates)} already there, "
               f"{len(refused)} refused")
    if refused:
        raise SystemExit(1)


@click.group("campaign")
def campaign_group():
    """Benchmark campaigns: define, publish, add models and gold pairs, follow progress."""


def _campaign_call(fn):
    from .campaigns import CampaignError
    from .images import ImageRejected

    try:
        return fn()
    except (CampaignError, ImageRejected) as exc:
        raise click.ClickException(str(exc)) from exc


@campaign_group.command("create")
@click.argument("name")
@click.option("--prompt-set", required=True,
              help="DrawBench, PartiPrompts (imported on first use) or an imported set.")
@click.option("--models", required=True, help="Comma-separated model names.")
@click.option("--criteria", default="preference,coherence,alignment", show_default=True)
@click.option("--images-per-model", default=4, show_default=True, type=int)
@click.option("--target-votes", default=26, show_default=True, type=int)
@with_appcontext
def campaign_create_command(name, prompt_set, models, criteria, images_per_model,
                            target_votes):
    """Define campaign NAME (it stays hidden from voters until published)."""
    from .campaigns import create_campaign

    campaign = _campaign_call(lambda: create_campaign(
        name, prompt_set, [m.strip() for m in models.split(",") if m.strip()],
        [c.strip() for c in criteria.split(",") if c.strip()], images_per_model, target_votes))
    click.echo(f"Created campaign {campaign.name!r} on {campaign.prompt_set.name} with "
               f"{len(campaign.models)} models; publish it with: arena campaign publish {name}")


@campaign_group.command("publish")
@click.argument("name")
@with_appcontext
def campaign_publish_command(name):
    """Publish NAME: build its comparisons so voters see them."""
    from .campaigns import get_campaign, publish

    added = _campaign_call(lambda: publish(get_campaign(name)))
    click.echo(f"Published {name!r}: {added} comparisons added.")


@campaign_group.command("add-model")
@click.argument("name")
@click.argument("model")
@with_appcontext
def campaign_add_model_command(name, model):
    """Let MODEL join campaign NAME (only the new pairs are added)."""
    from .campaigns import add_model, get_campaign

    added = _campaign_call(lambda: add_model(get_campaign(name), model))
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
    from .campaigns import add_gold_pair, get_campaign

    pair = _campaign_call(lambda: add_gold_pair(
        get_campaign(name), criterion, correct.read_bytes(), wrong.read_bytes(), prompt_id,
        names=(correct.name, wrong.name)))
    click.echo(f"Added gold pair {pair.id} for {criterion}.")


@campaign_group.command("status")
@click.argument("name")
@with_appcontext
def campaign_status_command(name):
    """Votes collected against needed, vote rate, time to completion, voters."""
    from .campaigns import get_campaign, progress

    p = _campaign_call(lambda: progress(get_campaign(name)))
    state = "published" if p.campaign.published_at else "not published"
    click.echo(f"{p.campaign.name} ({state}): {p.votes_total:,d} of {p.needed_total:,d} votes")
    for c in p.criteria:
        click.echo(f"  {c['criterion']:<11} {c['collected']:>8,d} / {c['needed']:,d} "
                   f"over {c['comparisons']:,d} comparisons")
    rate = f"{p.votes_per_hour:.1f} votes/hour" if p.votes_per_hour else "no votes in 24 h"
    eta = f", about {p.eta_hours:.1f} h to go" if p.eta_hours is not None else ""
    click.echo(f"  {rate}{eta}; {p.voters} voters; gold pairs passed by "
               f"{p.validation['passed']} of {p.validation['voters']} voters who met one")


@click.group("hype")
def hype_group():
    """HYPE real/fake evaluation."""


@hype_group.command("import-reals")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@with_appcontext
def hype_import_reals_command(folder):
    """Store the images of FOLDER as real (training-set) images for HYPE."""
    from .hype import import_reals

    total = sum(1 for p in folder.iterdir() if p.is_file())
    with click.progressbar(length=total, label="Importing real images") as bar:
        stored, refused = import_reals(folder, progress=bar.update)
    for name, reason in refused:
        click.echo(f"refused  {name}: {reason}", err=True)
    click.echo(f"{stored} real images stored, {len(refused)} refused")


@hype_group.command("create-run")
@click.argument("name")
@click.option("--mode", type=click.Choice(["infinity", "time"]), default="infinity",
              show_default=True)
@click.option("--models", required=True, help="Comma-separated model names.")
@with_appcontext
def hype_create_run_command(name, mode, models):
    """Open a HYPE evaluation of some models (evaluators find it under /hype/)."""
    from .hype import HypeError, create_run

    try:
        run = create_run(name, mode, [m.strip() for m in models.split(",") if m.strip()])
    except HypeError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"Opened HYPE run {run.name!r} ({mode}) for {len(run.models)} models.")


@hype_group.command("score")
@click.option("--trials", "trials_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="CSV: evaluator,model,image,is_real,judged_real,exposure_ms,block.")
@click.option("--mode", type=click.Choice(["infinity", "time"]), default="infinity",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True)
@click.option("--rounds", type=click.IntRange(100, 1_000_000), default=10_000,
              show_default=True, help="Bootstrap rounds (resampling evaluators).")
@click.option("--seed", type=int, default=0, show_default=True)
def hype_score_command(trials_file, mode, fmt, rounds, seed):
    """Score a file of HYPE trials collected elsewhere, with the paper's table."""
    import csv as csv_module
    import io
    import json
    from dataclasses import asdict

    import numpy as np

    from .hype_files import TrialsFileError, read_trials
    from .ranking.hype import score_infinity, score_time, separability

    try:
        trials = read_trials(trials_file, need_time=mode == "time")
        scorer = score_infinity if mode == "infinity" else score_time
        scores, per_evaluator = scorer(trials, rounds=rounds, rng=np.random.default_rng(seed))
    except (TrialsFileError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    tests = separability(per_evaluator)
    rows = [asdict(s) for s in scores]
    if fmt == "json":
        click.echo(json.dumps({"mode": mode, "models": rows, "separability": asdict(tests)},
                              indent=2))
        return
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv_module.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        click.echo(buf.getvalue(), nl=False)
        return
    unit = "%" if mode == "infinity" else " ms"
    title = "HYPE-∞ (deception rate)" if mode == "infinity" else "HYPE-time (modal exposure)"
    click.echo(f"{title}, 95% bootstrap CI over evaluators, {rounds:,d} rounds")
    click.echo(f"{'rank':>4}  {'model':20} {'HYPE':>9} {'fakes err':>9} {'reals err':>9} "
               f"{'std':>7} {'95% CI':>17} {'evals':>5}")
    for s in scores:
        fe = "-" if s.fakes_error is None else f"{s.fakes_error:.1f}%"
        re_ = "-" if s.reals_error is None else f"{s.reals_error:.1f}%"
        click.echo(f"{s.rank:>4}  {s.model[:20]:20} {s.score:8.1f}{unit[-1]} {fe:>9} {re_:>9} "
                   f"{s.std:7.2f} {s.ci_low:8.1f}–{s.ci_high:<8.1f} {s.evaluators:>5}")
    if tests.anova_p is not None:
        click.echo(f"ANOVA across models: F = {tests.anova_f:.2f}, p = {tests.anova_p:.3g}")
        for t in tests.tukey:
            click.echo(f"  Tukey HSD {t['a']} vs {t['b']}: difference {t['difference']:.2f}, "
                       f"p = {t['p']:.3g}")
    if tests.ttest_p is not None:
        click.echo(f"Welch t-test: t = {tests.ttest_t:.2f}, p = {tests.ttest_p:.3g}")


def register(app: Flask) -> None:
    for command in (demo_command, serve_command, import_prompts_command, elo_group,
                    rank_command, token_group, owner_group, model_group, import_command,
                    campaign_group, hype_group):
        app.cli.add_command(command)


def _make_app():
    from . import create_app

    return create_app()


main = FlaskGroup(create_app=_make_app, help="Arena: human evaluation of image models.")
