"""Attacks on identity: mint a new voter per request, or spread one voter over networks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arena.infra.network import _parsed_network, network_hash, network_of
from tests.factories import make_campaign
from tests.web.helpers import api_session, bearer, csrf_token

HOME, OTHER = "203.0.113.9", "198.51.100.20"


def from_address(app, address: str):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_new_identities_are_counted_per_network_on_every_route(make_app):
    """A new identity used to cost one request. Now new voters made from one network are
    limited, whichever route makes them, and a whole /24 counts as one network."""
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="4/hour")
    with app.app_context():
        make_campaign()
    codes = [api_session(from_address(app, f"203.0.113.{k}")).status_code for k in (1, 2)]
    for k in (3, 4):  # the voter page makes identities too, and counts against the same
        browser = from_address(app, f"203.0.113.{k}")
        token = csrf_token(browser.get("/").get_data(as_text=True))
        codes.append(browser.post("/start", data={"csrf_token": token}).status_code)
    codes.append(api_session(from_address(app, "203.0.113.200")).status_code)
    assert codes == [201, 201, 303, 303, 429]
    # another network is not affected, and known voters keep voting from the busy one
    assert api_session(from_address(app, OTHER)).status_code == 201
    known = api_session(from_address(app, OTHER)).json["voter_token"]
    assert api_session(from_address(app, HOME), token=known).status_code == 201


def test_one_identity_gains_nothing_by_changing_networks(make_app):
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_VOTES="3/hour", VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
    body = api_session(from_address(app, HOME), {"criterion": "preference"}).json
    token, codes = body["voter_token"], []
    tasks = body["tasks"] + api_session(from_address(app, HOME), {"criterion": "preference"},
                                        token=token).json["tasks"]
    for k, task in enumerate(tasks[:4]):
        client = from_address(app, f"10.{k}.0.1")  # a new network for every vote
        codes.append(client.post(f"/api/v1/tasks/{task['task_id']}/vote",
                                 json={"choice": "left"}, headers=bearer(token)).status_code)
    assert codes == [201, 201, 201, 429]


def test_network_hashes_keep_no_address():
    assert network_of("203.0.113.77") == "203.0.113.0/24"
    assert network_of("2001:db8:1:2:3::1") == "2001:db8:1::/48"
    assert network_of("::ffff:203.0.113.5") == "203.0.113.0/24"
    assert network_of("not an address") == network_of(None) == "unknown"
    one, same = network_hash("k", "203.0.113.1"), network_hash("k", "203.0.113.254")
    assert one == same and one != network_hash("k", "203.0.114.1")
    assert one != network_hash("other key", "203.0.113.1")
    assert "203" not in one and len(one) == 32



def test_made_up_tokens_on_task_routes_gain_nothing(make_app):
    """A task route reads its voter with its task in one statement, the rate limiter's
    lookup included. The attack: a new made-up token for every request, hoping for a
    per-voter bucket each. A token nobody holds is no identity: its requests share their
    network's per-voter bucket (no bucket of their own fills the limiter's store), are
    refused (401) and touch nothing."""
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_VOTES="2/hour",
                   RATE_LIMIT_NETWORK_VOTES="100/hour", VALIDATION_RATE=0.0)
    with app.app_context():
        make_campaign()
    body = api_session(from_address(app, OTHER), {"criterion": "preference"}).json
    task = body["tasks"][0]["task_id"]
    attacker = from_address(app, HOME)
    codes = [attacker.post(f"/api/v1/tasks/{task}/vote", json={"choice": "left"},
                           headers=bearer(f"made-up-{k}")).status_code for k in range(5)]
    assert codes == [401, 401, 429, 429, 429]
    # the task's voter, on their own network, is untouched and votes
    assert from_address(app, OTHER).post(
        f"/api/v1/tasks/{task}/vote", json={"choice": "left"},
        headers=bearer(body["voter_token"])).status_code == 201


def test_a_made_up_token_is_no_identity(make_app):
    """The bypass: any 'Authorization: Bearer' header used to count as an existing
    identity, so cookie routes minted voters without limit. Now only an identity the route
    itself reads, held by a voter who exists, lifts the new-identity limit."""
    app = make_app(RATELIMIT_ENABLED=True, RATE_LIMIT_NEW_VOTERS="3/hour")
    with app.app_context():
        make_campaign()
    codes = []
    for k in range(6):
        browser = from_address(app, f"203.0.113.{k + 1}")
        token = csrf_token(browser.get("/").get_data(as_text=True))
        codes.append(browser.post("/start", data={"csrf_token": token},
                                  headers=bearer(f"made-up-{k}")).status_code)
    assert codes == [303, 303, 303, 429, 429, 429]
    # the API refuses an unknown token outright, creating nobody
    assert api_session(from_address(app, OTHER), token="made-up").status_code == 401


def test_public_tables_do_not_list_models_nobody_voted_on(make_app):
    """A model registered a minute ago (perhaps not announced) appeared on the public
    leaderboard at once. Public tables list models with counted votes only."""
    app = make_app()
    with app.app_context():
        make_campaign()
        from tests.factories import make_model

        make_model("VictimGen-3")
    client = app.test_client()
    names = [m["model"] for m in client.get("/api/v1/leaderboard").json["models"]]
    page = client.get("/leaderboard").get_data(as_text=True)
    assert "VictimGen-3" not in names and "VictimGen-3" not in page


_OCTETS = st.one_of(st.integers(0, 300).map(str), st.from_regex(r"0[0-9]{1,3}", fullmatch=True),
                    st.sampled_from(["", " ", "-1", "1e2", "٣"]))


@given(st.lists(_OCTETS, min_size=3, max_size=5).map(".".join) | st.text(max_size=20))
def test_the_dotted_quad_shortcut_reads_addresses_as_ipaddress_does(address):
    """network_of's shortcut for IPv4 agrees with ipaddress on every text: leading zeros,
    parts over 255, too few or many parts, other digits and spaces."""
    assert network_of(address) == _parsed_network(address)


def test_a_new_voter_records_its_networks_keyed_hash_never_its_address(make_app):
    """What the farm screen groups voters by: the keyed hash of the network a voter was
    first seen on, the same for one /24, on every route that makes a voter."""
    from sqlalchemy import select

    from arena.extensions import db
    from arena.models import Voter

    app = make_app()
    with app.app_context():
        make_campaign()
    tokens = [api_session(from_address(app, address)).json["voter_token"]
              for address in ("203.0.113.5", "203.0.113.77", OTHER)]
    browser = from_address(app, "203.0.113.9")
    browser.post("/start", data={"csrf_token": csrf_token(browser.get("/").get_data(
        as_text=True))})
    assert len(tokens) == 3
    with app.app_context():
        seen = db.session.scalars(select(Voter.network).order_by(Voter.id)).all()
        secret = app.config["SECRET_KEY"]
    assert seen == [network_hash(secret, "203.0.113.5")] * 2 + [
        network_hash(secret, OTHER), network_hash(secret, "203.0.113.9")]
    assert seen[0] == seen[3] != seen[2]
    assert not any("203.0" in s or "198.51" in s for s in seen)
