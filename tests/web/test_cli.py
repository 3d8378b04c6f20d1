import pytest
from sqlalchemy import func, select

from arena.extensions import db
from arena.models import EloRating, Prompt


def test_import_prompts_command(runner, app, tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("Prompt,Category\nA cat,Animals\nA dog,Animals\n")
    result = runner.invoke(args=["import-prompts", str(path), "--name", "pets"])
    assert result.exit_code == 0, result.output
    assert "Imported 2 prompts into set 'pets'" in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Prompt)) == 2


def test_import_prompts_bad_file_fails_with_the_line(runner, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("Prompt\nok\n\"\"\n")
    result = runner.invoke(args=["import-prompts", str(path)])
    assert result.exit_code != 0
    assert "line 3: empty prompt" in result.output


def test_demo_then_elo_replay(runner, app):
    result = runner.invoke(args=["demo", "--prompts", "1", "--images", "1", "--votes", "30"])
    assert result.exit_code == 0, result.output
    assert "1 prompts, 4 models, 4 images, 18 comparisons" in result.output
    assert "simulated votes cast" in result.output
    assert "already loaded" in runner.invoke(args=["demo"]).output
    with app.app_context():
        db.session.execute(EloRating.__table__.update().values(rating=5.0))
        db.session.commit()
    result = runner.invoke(args=["elo", "replay"])
    assert result.exit_code == 0, result.output
    assert "votes replayed" in result.output
    with app.app_context():
        ratings = dict(db.session.execute(select(EloRating.model_id, EloRating.rating)
                                          .where(EloRating.criterion == "preference")).all())
        assert 5.0 not in ratings.values()
        assert sum(ratings.values()) == pytest.approx(4000.0)


def test_db_upgrade_is_idempotent(runner):
    result = runner.invoke(args=["db", "upgrade"])
    assert result.exit_code == 0, result.output


def test_a_new_instance_path_gets_an_error_then_db_upgrade_sets_it_up(tmp_path, monkeypatch):
    """Any command on an instance folder that is not there yet says what to run (no
    traceback); ``arena db upgrade`` then creates the folder, the schema and the secrets that
    ``gunicorn wsgi:app`` needs, as ``arena serve`` does."""
    from click.testing import CliRunner

    from arena import cli, wsgi_app

    instance = tmp_path / "new" / "instance"
    monkeypatch.setenv("ARENA_INSTANCE_PATH", str(instance))
    for key in ("ARENA_SECRET_KEY", "ARENA_PSEUDONYM_KEY", "ARENA_DATABASE_URL"):
        monkeypatch.delenv(key, raising=False)
    refused = CliRunner().invoke(cli.main, ["rank", "--criterion", "preference"])
    assert refused.exit_code == 6, refused.output
    assert "Error: The database is not set up yet" in refused.output
    assert "arena db upgrade" in refused.output
    assert "Traceback" not in refused.output
    assert not instance.exists()

    upgraded = CliRunner().invoke(cli.main, ["db", "upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    assert "SECRET_KEY =" in (instance / "config.py").read_text()
    assert wsgi_app().config["SECRET_KEY"]  # refuses to build without persistent secrets
    ranked = CliRunner().invoke(cli.main, ["rank", "--criterion", "preference"])
    assert ranked.exit_code == 0, ranked.output
    assert "no votes yet" in ranked.output


def test_arena_help_lists_exactly_the_registered_commands_without_building_the_app(
        tmp_path, monkeypatch):
    """``arena --help`` reads a table instead of building the app; the table must say what the
    app would register, word for word."""
    from click.testing import CliRunner
    from flask.cli import FlaskGroup

    from arena import cli, create_app

    monkeypatch.setenv("ARENA_INSTANCE_PATH", str(tmp_path))
    eager = FlaskGroup(create_app=create_app, help=cli.main.help)
    expected = CliRunner().invoke(eager, ["--help"], prog_name="arena")
    assert expected.exit_code == 0, expected.output

    def no_app():
        raise AssertionError("arena --help built the app")

    lazy = cli.ArenaGroup(create_app=no_app, help=cli.main.help)
    listed = CliRunner().invoke(lazy, ["--help"], prog_name="arena")
    assert listed.exit_code == 0, listed.output
    assert listed.output == expected.output
    assert "rank " in listed.output


def test_arena_help_starts_without_importing_the_app(tmp_path):
    """The modules that make start-up slow (Alembic, SciPy, the views) stay unimported."""
    import subprocess
    import sys

    probe = ("import sys; from arena.cli import main\n"
             "try: main(['--help'], prog_name='arena')\n"
             "except SystemExit: pass\n"
             "print(sorted(m for m in ('alembic', 'scipy', 'numpy', 'arena.web', 'sqlalchemy')"
             " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env={"ARENA_INSTANCE_PATH": str(tmp_path), "PATH": ""})
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_each_command_is_found_in_its_module_and_rank_imports_no_other(tmp_path):
    """COMMAND_MODULES names every module's commands and no more; running ``arena rank``
    imports the analysis commands alone (not the campaigns' SciPy-heavy allocation, the
    accounts' or the HYPE ones)."""
    import importlib
    import os
    import subprocess
    import sys

    from arena import cli

    declared = {c.name: name for name in set(cli.COMMAND_MODULES.values())
                for c in importlib.import_module(f"arena.cli.{name}").COMMANDS}
    assert declared == cli.COMMAND_MODULES
    assert set(cli.COMMAND_SUMMARIES) - {"db", "routes", "run", "shell"} == set(declared)
    probe = ("import sys; from arena.cli import main\n"
             "try: main(['rank', '--criterion', 'preference'], prog_name='arena')\n"
             "except SystemExit: pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('arena.cli.')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={**os.environ, "ARENA_INSTANCE_PATH": str(tmp_path)})
    assert out.stdout.strip().splitlines()[-1] == "['arena.cli.analysis']", out.stdout + out.stderr
