from datetime import datetime

import pytest
from sqlalchemy import inspect, select

from arena.extensions import db
from arena.models import Voter
from arena.voting import voters
from arena.voting.voters import DemographicsError, MinorRefused, clean_demographics, countries


def test_country_maps_to_continent():
    assert clean_demographics({"country": "fr"}) == {
        "age_group": None, "gender": None, "country": "FR", "continent": "EU"}
    assert clean_demographics({"country": "BR"})["continent"] == "SA"
    assert clean_demographics({"country": "NZ"})["continent"] == "OC"


def test_every_country_has_one_of_six_continents():
    assert len(countries()) > 240
    assert {c.continent for c in countries().values()} == {"AF", "AS", "EU", "NA", "OC", "SA"}


def test_prefer_not_to_say_and_missing_store_nothing():
    undisclosed = {"age_group": "undisclosed", "gender": "undisclosed", "country": "undisclosed"}
    expected = dict.fromkeys(["age_group", "gender", "country", "continent"])
    assert clean_demographics(undisclosed) == expected
    assert clean_demographics(None) == expected


def test_minors_are_refused():
    with pytest.raises(MinorRefused):
        clean_demographics({"age_group": "0-17"})


@pytest.mark.parametrize("raw,field", [
    ({"age_group": "17"}, "age_group"),
    ({"gender": "robot"}, "gender"),
    ({"country": "XX"}, "country"),
    ({"country": 33}, "country"),
    ({"birthday": "2000-01-01"}, "birthday"),
])
def test_invalid_answers_name_the_field(raw, field):
    with pytest.raises(DemographicsError) as info:
        clean_demographics(raw)
    assert info.value.field == field


@pytest.fixture
def in_db(any_app):
    with any_app.app_context():
        yield any_app


def test_a_voter_looked_up_by_token_is_the_sessions_own_loaded_object(in_db):
    """The lookup reads a Core row and makes the session's object from it: the object is
    the one an ORM query gives (same values, clean, persistent), changes to it are written,
    and an object the session already holds is the one returned."""
    made, token = voters.create_voter({"country": "KE", "age_group": "30-39"},
                                      with_token=True)
    made.last_action_at = datetime(2026, 3, 4, 5, 6, 7, 890000)
    db.session.commit()
    voter_id, public_id = made.id, made.public_id
    db.session.remove()

    voter = voters.voter_by_token(token)
    state = inspect(voter)
    assert state.persistent and not state.modified and voter in db.session
    assert voters.voter_by_token(token) is voter and voters.voter_by_token("nope") is None
    queried = db.session.execute(select(Voter).where(Voter.id == voter_id)).scalar_one()
    assert queried is voter  # (the query finds the session's object)
    columns = [c.key for c in Voter.__table__.c]
    fresh = db.session.execute(select(*Voter.__table__.c).where(Voter.id == voter_id)).one()
    assert [getattr(voter, name) for name in columns] == list(fresh)
    voters.update_demographics(voter, {"country": "FR"})
    db.session.commit()
    db.session.remove()
    assert voters.voter_by_public_id(public_id).continent == "EU"


def test_every_voter_column_is_named_as_its_attribute():
    """The voter lookup puts a row's values in the instance's dict under the columns'
    names (arena.voting.voters._loaded): a column named unlike its attribute would be
    stored under the wrong key and read as expired."""
    from arena.models import Voter

    mapper = Voter.__mapper__
    assert [mapper.get_property_by_column(c).key for c in Voter.__table__.c] == [
        c.key for c in Voter.__table__.c]
    assert all(c.key.isidentifier() and not c.key.startswith("_") for c in Voter.__table__.c)


def test_a_task_belongs_to_the_voter_it_was_issued_to(campaign):
    """Another voter's credential finds the task, not a right to it."""
    from arena.voting import tasks
    from tests.factories import start

    voter, voting_session = start()
    task_id = voting_session.tasks[0].id
    assert tasks.owned_task(voter, task_id).id == task_id
    other, _ = voters.create_voter()
    db.session.commit()
    with pytest.raises(tasks.NotYourTask):
        tasks.owned_task(other, task_id)
    with pytest.raises(tasks.TaskNotFound):
        tasks.owned_task(voter, task_id + 10_000)
    assert voters.voter_by_public_id("nobody") is None
