"""arena.voting.shown: a session as its voter is shown it, read as plain rows, says what the
ORM objects say (tasks in order, captions as the read gate decides them, image sizes), on
both databases."""

import numpy as np
import pytest

from arena.catalog.presentation import task_sizes
from arena.extensions import db
from arena.models import Image
from arena.voting import matchmaking, shown, tasks
from tests.factories import make_campaign, new_voter


@pytest.fixture
def on(any_app):
    with any_app.app_context():
        make_campaign()
        # two image sizes: a task is offered at one size or at three
        for image in db.session.scalars(db.select(Image)):
            image.width, image.height = (300, 200) if image.id % 2 else (1024, 1024)
        db.session.commit()
        any_app.config.update(VALIDATION_RATE=1.0, PRESENT_SIZES=(256, 512, 1024))
        yield any_app


@pytest.mark.parametrize("criterion", ["alignment", "preference", "coherence"])
def test_what_is_shown_is_what_the_orm_loads(on, criterion):
    voter = new_voter()
    orm = matchmaking.start_session(voter, np.random.default_rng(4), criterion)
    seen = shown.session(orm.public_id)
    assert seen == shown.session(orm.id)
    assert (seen.id, seen.public_id, seen.voter_id, seen.criterion) == (
        orm.id, orm.public_id, voter.id, criterion)
    assert [t.id for t in seen.tasks] == [t.id for t in orm.tasks]  # (by position)
    for ours, theirs in zip(seen.tasks, orm.tasks, strict=True):
        assert ours.caption == tasks.caption_of(theirs)
        assert (ours.position, ours.total, ours.criterion) == (
            theirs.position, len(orm.tasks), criterion)
        assert (ours.shown_at, ours.read_confirmed_at, ours.answered_at) == (
            theirs.shown_at, theirs.read_confirmed_at, theirs.answered_at)
        assert ours.left_image == (theirs.left_image.width, theirs.left_image.height)
        assert ours.right_image == (theirs.right_image.width, theirs.right_image.height)
    if criterion == "alignment":
        assert all(t.caption for t in seen.tasks)
    else:
        assert not any(t.caption for t in seen.tasks)
    offered = {task_sizes(t) for t in seen.tasks}
    assert offered == {task_sizes(t) for t in orm.tasks}


def test_the_session_of_a_task_and_nothing_for_unknown_keys(on):
    orm = matchmaking.start_session(new_voter(), np.random.default_rng(5), "preference")
    last = orm.tasks[-1]
    loaded, task = tasks.for_display(last.id)
    assert loaded == shown.session(orm.id) and task == loaded.tasks[-1]
    assert shown.session(-1) is None and shown.session("nope") is None
    with pytest.raises(tasks.TaskNotFound):
        tasks.for_display(-1)
