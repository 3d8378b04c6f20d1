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
    assert "1 prompts, 4 models, 4 images, 18 comparisons, 3 validation pairs" in result.output
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
