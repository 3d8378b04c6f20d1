"""The image store: ``arena storage migrate`` copies it to a bucket or to the local folder."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import with_appcontext

from arena.infra import storage


@click.group("storage")
def storage_group():
    """The image store: copy it between the local folder and an S3 bucket."""


@storage_group.command("migrate")
@click.option("--to", "target_url", required=True, metavar="local|s3://BUCKET/PREFIX",
              help="The store to copy to: local (the folder IMAGE_DIR) or a bucket.")
@with_appcontext
def migrate_command(target_url):
    """Copy every stored image of the current store (STORAGE_URL) to another one.

    Objects already there are skipped: run it again to resume an interrupted copy, or to
    copy what arrived since. Then set ARENA_STORAGE_URL to the new store and restart.
    """
    source = storage.get_storage()
    target = storage.open_storage(target_url, current_app.config["IMAGE_DIR"])
    names = storage.stored_names(source, target)
    with click.progressbar(length=len(names), label=f"Copying to {target}") as bar:
        copied, kept = storage.copy_all(source, target, names, progress=bar.update)
    click.echo(f"{copied} copied, {kept} already in {target}")


COMMANDS = (storage_group,)
