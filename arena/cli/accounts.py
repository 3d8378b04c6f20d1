"""Accounts: staff tokens (``arena token``) and model owners (``arena owner``)."""

from __future__ import annotations

import click
from flask.cli import with_appcontext

from arena.accounts import owners, tokens


@click.group("token")
def token_group():
    """Staff API tokens: analysts (exports) and operators (the /admin pages)."""


@token_group.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(tokens.ROLES), default="analyst", show_default=True,
              help="analyst: exports; operator: the /admin pages.")
@with_appcontext
def token_create_command(name, role):
    """Create a token; it is printed once and only its hash is kept."""
    token = tokens.create_token(name, role=role)
    click.echo(f"Token for {name!r} (store it now, it cannot be shown again):", err=True)
    click.echo(token)


@token_group.command("revoke")
@click.argument("name")
@with_appcontext
def token_revoke_command(name):
    """Revoke the active token called NAME."""
    tokens.revoke_token(name)
    click.echo(f"Revoked {name!r}.")


@token_group.command("list")
@with_appcontext
def token_list_command():
    """List tokens (names and dates, never the tokens)."""
    for row in tokens.list_tokens():
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
    token = owners.create_owner(name)
    click.echo(f"Token for owner {name!r} (give it to them now, it cannot be shown again):",
               err=True)
    click.echo(token)


@owner_group.command("revoke")
@click.argument("name")
@with_appcontext
def owner_revoke_command(name):
    """Revoke an owner's token (their models and images stay)."""
    owners.revoke_owner(name)
    click.echo(f"Revoked owner {name!r}.")


COMMANDS = (token_group, owner_group)
