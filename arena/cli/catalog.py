"""The catalog: prompt sets (``arena import-prompts``), models (``arena model``) and their
images (``arena import``)."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import with_appcontext

from arena.accounts import owners
from arena.catalog import images, ingest, prompts, registry
from arena.cli import resumable


@click.command("import-prompts")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", help="Prompt set name (default: the file name without extension).")
@with_appcontext
def import_prompts_command(path, name):
    """Import a prompt set from a CSV/TSV (Prompt, Category columns) or JSON lines file."""
    total = sum(1 for _ in prompts.read_prompt_file(path))
    with click.progressbar(length=total, label=f"Importing {path.name}") as bar:
        prompt_set = prompts.import_prompts(path, name=name, progress=bar.update)
    click.echo(f"Imported {total} prompts into set {prompt_set.name!r} (id {prompt_set.id}).")


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
    model = registry.register_model(owners.get_owner(owner_name), name, description, link)
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
    model = registry.get_model(model_name)
    count, items = ingest.import_items(source)
    with click.progressbar(length=count, label=f"Importing into {model_name}") as bar, \
            resumable("files", count) as handled:
        results = ingest.ingest_batch(model, items,
                                      progress=lambda _r: (bar.update(1), handled()))
    refused = [r for r in results if not r.ok]
    for r in refused:
        click.echo(f"refused  {ingest.printable(r.filename)}: {r.reason}", err=True)
    accepted = sum(r.ok and not r.duplicate for r in results)
    click.echo(f"{accepted} accepted, {sum(r.duplicate for r in results)} already there, "
               f"{len(refused)} refused")
    if refused:
        raise SystemExit(1)


@click.group("images")
def images_group():
    """Stored images."""


@images_group.command("prepare")
@click.option("--again", is_flag=True,
              help="Make every presented variant again, not only the missing ones (after "
                   "an upgrade that changed how images are presented).")
@with_appcontext
def images_prepare_command(again):
    """Make every missing presented variant (after PRESENT_SIZES changed, or files were
    lost; images get theirs when stored)."""
    from arena.catalog.presentation import refresh_padding
    from arena.extensions import db
    from arena.hype.runs import list_runs

    with click.progressbar(length=images.stored_count(), label="Presenting images") as bar:
        made = images.prepare_presented(progress=bar.update, again=again)
    if again:  # (a run's one byte length must cover its files as they are now)
        for run in list_runs():
            refresh_padding(run)
        db.session.commit()
    click.echo(f"{made} presented variants made")


@images_group.command("collisions")
@with_appcontext
def images_collisions_command():
    """Uploads held because the arena held their bytes already, with what they repeat."""
    from arena.catalog.presentation import collisions

    found = collisions()
    for c in found:
        click.echo(f"image {c.held_id} of model {c.held_model} (owner {c.held_owner}), "
                   f"{c.uploaded_at:%Y-%m-%d %H:%M}: repeats image {c.original_id} of "
                   f"{c.original}")
    click.echo(f"{len(found)} held uploads")


COMMANDS = (import_prompts_command, model_group, import_command, images_group)
