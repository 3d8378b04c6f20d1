from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.exc import OperationalError

from arena.errors import Conflict
from arena.extensions import db
from arena.infra import database
from arena.models import Comparison, EloRating, Task, Vote, Voter, utcnow
from arena.voting import live_elo, tasks, votes
from tests.factories import answer, new_voter, read_caption, start


def ratings(criterion="preference"):
    return {m: tuple(row) for m, row in live_elo.ratings(criterion).items()}


def test_vote_is_recorded_with_elo_and_counter(campaign):
    voter, session = start(validation_rate=0.0)
    task = session.tasks[0]
    result = votes.cast_vote(voter, task.id, "left", 1234)
    assert result == votes.VoteResult(accepted=True, session_id=session.public_id)
    vote = db.session.scalar(select(Vote))
    assert vote.winner_image_id == task.left_image_id
    assert vote.response_ms == 1234
    assert db.session.get(Comparison, task.comparison_id).votes_count == 1
    r = ratings()
    assert r[vote.winner_model_id] == (1002.0, 1, 1)
    assert r[vote.loser_model_id] == (998.0, 1, 0)


def test_the_same_vote_twice_counts_once(campaign):
    voter, session = start(validation_rate=0.0)
    task_id = session.tasks[0].id
    assert votes.cast_vote(voter, task_id, "right").accepted
    again = votes.cast_vote(voter, task_id, "left")
    assert again == votes.VoteResult(accepted=False, session_id=session.public_id,
                                     duplicate=True)
    assert len(db.session.scalars(select(Vote)).all()) == 1
    assert sum(v for _, v, _ in ratings().values()) == 2


def test_a_concurrent_duplicate_is_refused_by_the_unique_task(campaign):
    """Two requests for one task both pass the 'answered?' read before either writes: the
    unique task_id refuses the second at INSERT, and it reports a duplicate, not an error."""
    voter, session = start(validation_rate=0.0)
    task = session.tasks[0]
    votes.cast_vote(voter, task.id, "left")
    # the second request read the task before the first one committed
    db.session.execute(Task.__table__.update().where(Task.id == task.id)
                       .values(answered_at=None))
    db.session.commit()
    result = votes.cast_vote(voter, task.id, "right")
    assert result.duplicate and not result.accepted
    assert db.session.scalar(select(Vote.choice)) == "left"
    assert sum(v for _, v, _ in ratings().values()) == 2


def test_another_voters_task_is_refused(campaign):
    _, session = start()
    stranger = new_voter()
    with pytest.raises(votes.NotYourTask):
        votes.cast_vote(stranger, session.tasks[0].id, "left")
    with pytest.raises(votes.TaskNotFound):
        votes.cast_vote(stranger, 99999, "left")


@pytest.mark.parametrize("choice,ms", [("up", None), (None, None), ("left", -1),
                                       ("left", "12"), ("left", True), ("left", 10**9)])
def test_malformed_votes_are_refused(campaign, choice, ms):
    voter, session = start()
    with pytest.raises(votes.InvalidVote):
        votes.cast_vote(voter, session.tasks[0].id, choice, ms)
    assert db.session.scalar(select(Vote)) is None


def test_wrong_validation_answer_lowers_trust_and_skips_elo(ctx, campaign):
    voter, session = start(criterion="alignment", validation_rate=1.0)
    gold_task = next(t for t in session.tasks if t.comparison.is_validation)
    wrong_side = "left" if gold_task.left_image_id != gold_task.comparison.correct_image_id \
        else "right"
    before = ratings("alignment")
    result = answer(voter, gold_task, wrong_side)
    assert result.accepted and result.validation_failed
    db.session.expire_all()
    v = db.session.get(Voter, voter.id)
    assert v.validations_failed == 1 and v.trust == pytest.approx(0.75)
    assert ratings("alignment") == before
    assert db.session.scalar(select(Vote)).correct is False


def test_right_validation_answer_is_credited(campaign):
    voter, session = start(criterion="coherence", validation_rate=1.0)
    gold_task = next(t for t in session.tasks if t.comparison.is_validation)
    right_side = "left" if gold_task.left_image_id == gold_task.comparison.correct_image_id \
        else "right"
    assert not votes.cast_vote(voter, gold_task.id, right_side).validation_failed
    db.session.expire_all()
    assert db.session.get(Voter, voter.id).validations_passed == 1


def test_replay_reproduces_online_elo_exactly(campaign):
    rng = np.random.default_rng(11)
    for seed in range(8):
        voter, session = start(criterion=["preference", "coherence", "alignment"][seed % 3],
                               seed=seed, validation_rate=0.5)
        for task in session.tasks:
            answer(voter, task, ["left", "right"][int(rng.integers(2))])
    before = {c: ratings(c) for c in ("preference", "coherence", "alignment")}
    counters = dict(db.session.execute(select(Comparison.id, Comparison.votes_count)).all())
    assert any(r != 1000.0 for rows in before.values() for r, _, _ in rows.values())
    # Scramble the derived numbers, then rebuild them from the log.
    db.session.execute(EloRating.__table__.update().values(rating=0.0, votes=0, wins=0))
    db.session.execute(Comparison.__table__.update().values(votes_count=0, level=0))
    db.session.commit()
    votes.replay()
    db.session.expire_all()
    assert {c: ratings(c) for c in before} == before  # bit-for-bit equal floats
    assert dict(db.session.execute(select(Comparison.id, Comparison.votes_count)).all()) \
        == counters


def test_answered_task_is_marked(campaign):
    voter, session = start()
    votes.cast_vote(voter, session.tasks[1].id, "left")
    db.session.expire_all()
    assert db.session.get(Task, session.tasks[1].id).answered_at is not None
    card = tasks.card(voter, session.id, present=False)
    assert card.task.id == session.tasks[0].id and card.following.id == session.tasks[2].id


def test_a_vote_retried_on_a_lock_is_recorded_once(campaign, monkeypatch):
    """retry_on_lock runs the whole write again: one vote, from the attempt that
    committed."""
    voter, session = start(validation_rate=0.0)
    first = session.tasks[0].id
    from arena.voting import pacing

    real, calls = pacing.take_turn, []

    def locked_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise OperationalError("UPDATE voter", {}, Exception("database is locked"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pacing, "take_turn", locked_once)
    at = utcnow()
    result = votes.cast_vote(voter, first, "left", now=at)
    assert len(calls) == 2 and result.accepted
    db.session.expire_all()
    assert db.session.scalar(select(func.count()).select_from(Vote)) == 1
    assert db.session.get(Task, first).answered_at == at


# --- The read gate, as the service enforces it for every channel --------------------------


@pytest.fixture
def captioned(ctx, campaign):
    """An alignment session without gold pairs: every task has a caption to read."""
    db.session.execute(delete(Comparison).where(Comparison.is_validation))
    db.session.commit()
    voter, session = start(criterion="alignment", validation_rate=0.0)
    return voter, session.tasks[0]


def test_a_vote_before_the_caption_is_confirmed_is_refused(captioned):
    voter, task = captioned
    with pytest.raises(tasks.ReadNotConfirmed):
        votes.cast_vote(voter, task.id, "left")
    assert db.session.scalar(select(Vote)) is None


def test_confirmation_counts_only_after_the_reveal(captioned, ctx):
    voter, task = captioned
    caption = tasks.caption_of(task)
    assert caption.startswith("A red cube")
    reveal = tasks.reveal_ms(caption)
    assert reveal == len(caption.split()) * ctx.config["REVEAL_WORD_MS"]
    with pytest.raises(Conflict, match="not been shown"):
        tasks.confirm_read(voter, task.id)
    shown = utcnow()
    tasks.present([task], now=shown)
    too_soon = shown + timedelta(milliseconds=reveal - 50)
    with pytest.raises(tasks.StillRevealing) as refused:
        tasks.confirm_read(voter, task.id, now=too_soon)
    assert refused.value.details["retry_after_ms"] == 50
    tasks.confirm_read(voter, task.id, now=shown + timedelta(milliseconds=reveal))
    assert votes.cast_vote(voter, task.id, "right").accepted


def test_presenting_again_keeps_the_first_time(captioned):
    _voter, task = captioned
    first = utcnow() - timedelta(minutes=5)
    tasks.present([task], now=first)
    tasks.present([task])
    assert db.session.get(Task, task.id).shown_at == first


def test_tasks_without_a_caption_need_no_confirmation(campaign):
    voter, session = start(criterion="coherence", validation_rate=0.0)
    task = session.tasks[0]
    assert tasks.caption_of(task) is None
    with pytest.raises(Conflict, match="no caption"):
        tasks.confirm_read(voter, task.id)
    read_caption(voter, task)  # nothing to do
    assert votes.cast_vote(voter, task.id, "left").accepted


def test_someone_elses_confirmation_is_refused(captioned):
    _, task = captioned
    with pytest.raises(tasks.NotYourTask):
        tasks.confirm_read(new_voter(), task.id)


# --- Transient lock errors ----------------------------------------------------------------


def _locked():
    return OperationalError("INSERT", {}, Exception("database is locked"))


def test_retry_on_lock_retries_transient_errors_then_gives_up(monkeypatch):
    monkeypatch.setattr(database.time, "sleep", lambda _s: None)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise _locked()
        return "done"

    assert database.retry_on_lock(flaky) == "done" and len(calls) == 3
    calls.clear()
    with pytest.raises(OperationalError):
        database.retry_on_lock(lambda: calls.append(1) or (_ for _ in ()).throw(_locked()),
                               attempts=4)
    assert len(calls) == 4


def test_retry_on_lock_does_not_retry_other_errors():
    calls = []

    def broken():
        calls.append(1)
        raise OperationalError("SELECT", {}, Exception("no such table: vote"))

    with pytest.raises(OperationalError):
        database.retry_on_lock(broken)
    assert calls == [1]


def test_after_a_vote_what_it_wrote_is_read_afresh(campaign):
    """The vote commits: what it wrote of the voter and the task is read again."""
    voter, session = start(validation_rate=0.0)
    task = session.tasks[0]
    assert voter.last_action_at is None and task.answered_at is None
    votes.cast_vote(voter, task.id, "left", 1234)
    assert voter.last_action_at is not None and task.answered_at is not None


def test_a_turn_too_soon_is_refused_and_still_records_its_time(campaign):
    """take_turn says whether the floor had passed; a turn too soon still records its time."""
    from arena.voting import pacing

    voter, _ = start(validation_rate=0.0)
    at = utcnow() + timedelta(seconds=5)
    with database.write_transaction():
        paced = pacing.take_turn(voter.id, at, 1000)
        soon = pacing.take_turn(voter.id, at + timedelta(milliseconds=10), 1000)
    assert (paced, soon) == (True, False)
    db.session.expire_all()
    assert db.session.get(Voter, voter.id).last_action_at == at + timedelta(milliseconds=10)
