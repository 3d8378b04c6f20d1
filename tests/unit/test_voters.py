import pytest

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
