"""Operator commands leave the database's write lock free while they work on images, so
voters on SQLite never wait on them past the busy timeout.

`arena campaign publish` used to render its first damaged gold copies inside the
transaction that built the pairs: seconds under SQLite's one write lock on a busy box, and a
voter's Start meanwhile got "The database is unavailable right now". Here every image each
command prepares (decode, re-encode, presented variants: the expensive part) is watched
from a second connection that tries to take the write lock at that moment without waiting.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from sqlalchemy import select

from arena.campaigns import campaigns
from arena.catalog import images
from arena.extensions import db
from arena.models import Image, Prompt
from tests.factories import make_campaign, make_model, make_prompt_set


@pytest.fixture
def watched(app, monkeypatch):
    """For each image prepared: True when the write lock was free then (a voter's vote could
    commit at that moment), else why it could not be taken."""
    path = app.config["DATABASE_URL"].removeprefix("sqlite:///")
    prepare, seen = images.prepare, []

    def watching(img):
        probe = sqlite3.connect(path, timeout=0)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            seen.append(True)
        except sqlite3.OperationalError as exc:  # ("database is locked")
            seen.append(str(exc))
        finally:
            probe.close()
        return prepare(img)

    monkeypatch.setattr(images, "prepare", watching)
    return seen


def _textured(seed: int, size: int = 256):
    from PIL import Image as PILImage

    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    return PILImage.fromarray(pixels)


def test_publishing_renders_its_gold_with_the_write_lock_free(app, watched):
    app.config.update(GOLD_INITIAL_DAMAGED=3)
    with app.app_context():
        prompt_set = make_prompt_set("mine", [f"a scene number {i}" for i in range(3)])
        prompts = db.session.scalars(select(Prompt.id).where(
            Prompt.prompt_set_id == prompt_set.id)).all()
        for name in ("Mine-1", "Mine-2"):
            model = make_model(name)
            for k, prompt in enumerate(prompts):
                images.store(_textured(hash((name, k)) % 1000), model_id=model.id,
                             prompt_id=prompt)
        db.session.commit()
        campaigns.create_campaign("Mine", "mine", ["Mine-1", "Mine-2"],
                                  criteria=["preference", "coherence"], images_per_model=1)
        watched.clear()
        done = app.test_cli_runner().invoke(args=["campaign", "publish", "Mine"])
        assert done.exit_code == 0, done.output
        copies = db.session.scalars(select(Image).where(Image.source_id.is_not(None))).all()
    assert copies  # (damaged gold was made, by publishing)
    assert watched and all(free is True for free in watched), watched


def test_importing_images_and_reals_works_with_the_write_lock_free(app, watched, tmp_path):
    with app.app_context():
        make_campaign(n_prompts=2)
        prompt = db.session.scalar(select(Image.prompt_id).where(Image.prompt_id.is_not(None)))
        db.session.commit()
    folder, reals = tmp_path / "upload", tmp_path / "reals"
    folder.mkdir()
    reals.mkdir()
    for k in range(2):  # (make_campaign gave the model two of a prompt's four)
        _textured(100 + k).save(folder / f"{prompt}_{k}.png")
    for k in range(3):
        _textured(200 + k).save(reals / f"real-{k}.png")
    runner = app.test_cli_runner()
    watched.clear()
    done = runner.invoke(args=["import", str(folder), "--model", "model-0"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(args=["hype", "import-reals", str(reals)])
    assert done.exit_code == 0, done.output
    assert len(watched) == 5 and all(free is True for free in watched), watched


@pytest.mark.parametrize("command", ["import", "import-reals"])
def test_an_import_stopped_by_the_database_says_so_and_a_rerun_stores_the_rest(
        app, tmp_path, command):
    """The database gives way at the third image's row (as a lock held past the busy
    timeout does): the command ends with the outage's exit code and says how far it got and
    that running it again is safe; run again, it stores the rest and nothing twice."""
    from sqlalchemy import event, func

    with app.app_context():
        make_campaign(n_prompts=2, images_per_model=1)
        prompt = db.session.scalar(select(Image.prompt_id).where(Image.prompt_id.is_not(None)))
        db.session.commit()
        before = db.session.scalar(select(func.count()).select_from(Image))
        engine = db.engine
    folder = tmp_path / "files"
    folder.mkdir()
    for k in range(3):
        _textured(300 + k).save(folder / (f"{prompt}_{k}.png" if command == "import"
                                          else f"real-{k}.png"))
    args = (["import", str(folder), "--model", "model-0"] if command == "import"
            else ["hype", "import-reals", str(folder)])
    rows = []

    def give_way(conn, cursor, statement, *_):
        if statement.lstrip().upper().startswith("INSERT INTO IMAGE"):
            rows.append(statement)
            if len(rows) == 3:
                raise sqlite3.OperationalError("database is locked")

    event.listen(engine, "before_cursor_execute", give_way)
    try:
        stopped = app.test_cli_runner().invoke(args=args)
    finally:
        event.remove(engine, "before_cursor_execute", give_way)
    assert stopped.exit_code == 6, stopped.output
    assert "Stopped after 2 of 3 files: running the same command again takes up the rest" \
        in stopped.output
    again = app.test_cli_runner().invoke(args=args)
    assert again.exit_code == 0, again.output
    assert "1 accepted, 2 already there" in again.output or "1 real images stored" \
        in again.output, again.output
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Image)) == before + 3
