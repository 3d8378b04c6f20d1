"""HYPE real/fake evaluation: ``arena hype import-reals|create-run|score``."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import with_appcontext

from arena.cli import resumable


@click.group("hype")
def hype_group():
    """HYPE real/fake evaluation."""


@hype_group.command("import-reals")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@with_appcontext
def hype_import_reals_command(folder):
    """Store the images of FOLDER as real (training-set) images for HYPE."""
    from arena.hype.runs import import_reals

    total = sum(1 for p in folder.iterdir() if p.is_file())
    with click.progressbar(length=total, label="Importing real images") as bar, \
            resumable("files", total) as handled:
        stored, refused = import_reals(folder, progress=lambda n: (bar.update(n), handled()))
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
    from arena.hype.runs import create_run

    run = create_run(name, mode, [m.strip() for m in models.split(",") if m.strip()])
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
    import numpy as np

    from arena.hype import reports
    from arena.hype.trial_files import score_file

    scores, tests = score_file(trials_file, mode, rounds=rounds,
                               rng=np.random.default_rng(seed))
    text = {"json": lambda: reports.scores_json(mode, scores, tests) + "\n",
            "csv": lambda: reports.scores_csv(scores),
            "table": lambda: reports.scores_table(mode, scores, tests, rounds)}[fmt]()
    click.echo(text, nl=False)


COMMANDS = (hype_group,)
