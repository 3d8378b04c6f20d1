import re
from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select

from arena.extensions import db
from arena.models import Comparison, ImageReport, Task, Vote, Voter, VotingSession

from .helpers import confirm_read_if_asked, csrf_token, start_session, task_id


@pytest.fixture(autouse=True)
def quick_reveal(app):
    """Captions need no reading time here, except where a test sets it back."""
    app.config["REVEAL_WORD_MS"] = 0


def test_landing_explains_and_offers_prefer_not_to_say(client):
    html = client.get("/").get_data(as_text=True)
    assert "tap the better image" in html
    assert html.count("Prefer not to say") == 3
    assert 'value="FR"' in html and "Under 18" in html


def test_start_without_csrf_is_refused(client, web_campaign):
    response = client.post("/start", data={})
    assert response.status_code == 400
    assert "form expired" in response.get_data(as_text=True)


def test_minor_is_refused_and_nothing_is_stored(client, web_campaign, app):
    response = start_session(client, age_group="0-17")
    assert response.status_code == 403
    assert "18 or older" in response.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(Voter)) is None


def test_demographics_are_stored_coarsely(client, web_campaign, app):
    response = start_session(client, age_group="30-39", gender="female", country="KE")
    assert response.status_code == 303
    with app.app_context():
        voter = db.session.scalar(select(Voter))
        assert (voter.age_group, voter.gender, voter.country, voter.continent) == (
            "30-39", "female", "KE", "AF")


def test_full_session_without_javascript(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 0.0
    response = start_session(client)
    assert response.status_code == 303
    page = client.get(response.headers["Location"])
    html = page.get_data(as_text=True)
    assert "Question 1 of 3" in html
    for _ in range(3):
        html = confirm_read_if_asked(client, html)
        tid = task_id(html)
        data = {"csrf_token": csrf_token(html), "choice": "left", "response_ms": "900"}
        response = client.post(f"/t/{tid}", data=data)
        assert response.status_code == 303
        html = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "Thank you!" in html and "Next session" in html
    with app.app_context():
        assert len(db.session.scalars(select(Vote)).all()) == 3


def test_htmx_vote_returns_the_next_card_only(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 0.0
    location = start_session(client).headers["Location"]
    html = confirm_read_if_asked(client, client.get(location).get_data(as_text=True))
    response = client.post(
        f"/t/{task_id(html)}", data={"csrf_token": csrf_token(html), "choice": "right"},
        headers={"HX-Request": "true"},
    )
    body = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "<html" not in body and "Question 2 of 3" in body
    assert "HX-Request" in response.headers["Vary"]


def test_task_page_shows_question_and_opaque_images_only(client, web_campaign, app):
    location = start_session(client).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    urls = re.findall(r'<img src="([^"]+)"', html)
    assert len(urls) == 2
    small = app.config["PRESENT_SIZES"][0]
    assert all(re.fullmatch(rf"/img/t\d+[lr]-[A-Za-z0-9_-]{{22}}/{small}\.webp", u)
               for u in urls)
    assert "model-" not in html
    with app.app_context():
        session = db.session.scalar(select(VotingSession))
        from arena import criteria
        assert criteria.get(session.criterion).question in html.replace("&#39;", "'")


def alignment_page(client, app):
    """Leave only alignment comparisons, so the session is an alignment one."""
    app.config["VALIDATION_RATE"] = 0.0
    with app.app_context():
        db.session.execute(delete(Comparison).where(Comparison.criterion != "alignment"))
        db.session.commit()
    location = start_session(client).headers["Location"]
    return client.get(location).get_data(as_text=True)


def test_alignment_vote_needs_reading_confirmation(client, web_campaign, app):
    app.config["REVEAL_WORD_MS"] = 220
    html = alignment_page(client, app)
    assert 'class="word"' in html and "I have read the caption" in html
    assert re.search(r'<fieldset class="pair locked" disabled>', html)  # images off
    tid = task_id(html)
    # a vote before confirming, even with the old client-side field forged, is refused
    forged = client.post(f"/t/{tid}", data={"csrf_token": csrf_token(html), "choice": "left",
                                            "read_confirmed": "1", "response_ms": "1"})
    assert forged.status_code == 409
    assert "read the caption and confirm" in forged.get_data(as_text=True)
    # confirming before the caption could have been read is refused too
    early = client.post(f"/t/{tid}/read", data={"csrf_token": csrf_token(html)})
    assert early.status_code == 409 and "to the end" in early.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(Vote)) is None
        task = db.session.get(Task, tid)
        task.shown_at -= timedelta(seconds=30)  # the voter took their time to read
        db.session.commit()
    confirmed = client.post(f"/t/{tid}/read", data={"csrf_token": csrf_token(html)})
    assert confirmed.status_code == 303
    html = client.get(confirmed.headers["Location"]).get_data(as_text=True)
    assert '<fieldset class="pair">' in html and "I have read the caption" not in html
    response = client.post(f"/t/{tid}", data={"csrf_token": csrf_token(html), "choice": "left"})
    assert response.status_code == 303


def test_htmx_read_confirmation_returns_the_unlocked_card(client, web_campaign, app):
    html = alignment_page(client, app)
    tid = task_id(html)
    response = client.post(f"/t/{tid}/read", data={"csrf_token": csrf_token(html)},
                           headers={"HX-Request": "true"})
    body = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in body
    assert '<fieldset class="pair">' in body and "Question 1 of" in body


def test_someone_elses_session_and_task_are_forbidden(client, web_campaign, app):
    location = start_session(client).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    other = app.test_client()
    refused = other.get(location)
    assert refused.status_code == 403
    # (not "This is not yours to open" and the service's English)
    assert "This session is not open in this browser" in refused.text
    assert 'href="/"' in refused.text and "belongs to" not in refused.text
    missing = other.get("/s/nosuchsession", headers={"Accept-Language": "es"})
    assert missing.status_code == 404
    assert "Esta sesión no está abierta en este navegador" in missing.text
    start_session(other)
    other_html = other.get("/").get_data(as_text=True)
    response = other.post(f"/t/{task_id(html)}",
                          data={"csrf_token": csrf_token(other_html), "choice": "left"})
    assert response.status_code == 403


def test_a_questions_address_opened_as_a_page_leads_back_to_its_session(client, web_campaign,
                                                                          app):
    """Opening /t/<id> (where a form sent without JavaScript leaves the browser) used to
    get "Method not allowed". Its voter is taken to the session; anyone else,
    or a question that does not exist, to the start page, which tells nothing about it."""
    location = start_session(client).headers["Location"]
    task = task_id(client.get(location).get_data(as_text=True))
    for path in (f"/t/{task}", f"/t/{task}/read", f"/t/{task}/skip"):
        response = client.get(path)
        assert response.status_code == 303 and response.headers["Location"] == location
    with app.app_context():
        answered = db.session.scalar(select(func.count()).select_from(Task).where(
            Task.answered_at.is_not(None)))
    assert answered == 0  # nothing changed
    other = app.test_client()
    for path in (f"/t/{task}", f"/t/{task + 10_000}/read", f"/t/{task}/skip"):
        response = other.get(path)
        assert response.status_code == 303 and response.headers["Location"] == "/"


def test_html_vote_errors_say_what_to_do(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 0.0
    location = start_session(client, criterion="coherence").headers["Location"]
    html = client.get(location).get_data(as_text=True)
    tid, token = task_id(html), csrf_token(html)
    # no image chosen: the same card again with the reason, nothing recorded
    missing = client.post(f"/t/{tid}", data={"csrf_token": token})
    assert missing.status_code == 400
    body = missing.get_data(as_text=True)
    assert "Tap the image you choose" in body and task_id(body) == tid
    with_htmx = client.post(f"/t/{tid}", data={"csrf_token": token, "choice": "up"},
                            headers={"HX-Request": "true"})
    assert with_htmx.status_code == 400 and "<html" not in with_htmx.get_data(as_text=True)
    # a task that does not exist, and a browser that never started a session
    unknown = client.post("/t/999999", data={"csrf_token": token, "choice": "left"})
    assert unknown.status_code == 404 and "no task" in unknown.get_data(as_text=True)
    stranger = app.test_client()
    stranger_token = csrf_token(stranger.get("/").get_data(as_text=True))
    nobody = stranger.post(f"/t/{tid}", data={"csrf_token": stranger_token, "choice": "left"})
    assert nobody.status_code == 403 and "home page" in nobody.get_data(as_text=True)
    page = stranger.get(location)  # someone else's session: a page with a way back
    assert page.status_code == 403 and 'href="/"' in page.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalar(select(Vote)) is None


def test_double_submit_is_harmless(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 0.0
    html = client.get(start_session(client).headers["Location"]).get_data(as_text=True)
    html = confirm_read_if_asked(client, html)
    data = {"csrf_token": csrf_token(html), "choice": "left"}
    tid = task_id(html)
    first = client.post(f"/t/{tid}", data=data, headers={"HX-Request": "true"})
    second = client.post(f"/t/{tid}", data=data, headers={"HX-Request": "true"})
    assert first.status_code == second.status_code == 200
    with app.app_context():
        assert len(db.session.scalars(select(Vote)).all()) == 1
        assert db.session.get(Task, tid).answered_at is not None


def test_wrong_validation_answer_shows_a_warning(client, web_campaign, app):
    app.config["VALIDATION_RATE"] = 1.0
    location = start_session(client).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    with app.app_context():
        session = db.session.scalar(select(VotingSession))
        gold = next(t for t in session.tasks if t.comparison.is_validation)
        # answer every task before the gold one, then the gold one wrongly
        for task in session.tasks:
            if task.id == gold.id:
                break
            html = confirm_read_if_asked(client, html, **{"HX-Request": "true"})
            html = client.post(f"/t/{task.id}", data={"csrf_token": csrf_token(html),
                               "choice": "left"},
                               headers={"HX-Request": "true"}).get_data(as_text=True)
        wrong = "right" if gold.left_image_id == gold.comparison.correct_image_id else "left"
        gold_id = gold.id
    html = confirm_read_if_asked(client, html, **{"HX-Request": "true"})
    html = client.post(f"/t/{gold_id}", data={"csrf_token": csrf_token(html), "choice": wrong},
                       headers={"HX-Request": "true"}).get_data(as_text=True)
    assert "check question" in html


def test_no_raw_ip_is_stored(client, web_campaign, app):
    start_session(client, country="JP")
    with app.app_context():
        for table in db.metadata.sorted_tables:
            for row in db.session.execute(table.select()):
                assert "127.0.0.1" not in " ".join(map(str, row))


def test_criterion_links_start_that_criterion(client, web_campaign, app):
    html = client.get("/?criterion=alignment").get_data(as_text=True)
    assert 'name="criterion" value="alignment"' in html
    assert 'name="criterion"' not in client.get("/?criterion=beauty").get_data(as_text=True)
    response = client.post("/start", data={"csrf_token": csrf_token(html),
                                           "criterion": "alignment"})
    with app.app_context():
        assert db.session.scalar(select(VotingSession)).criterion == "alignment"
    assert response.status_code == 303
    bad = client.post("/start", data={"csrf_token": csrf_token(html), "criterion": "beauty"})
    assert bad.status_code == 400 and "criterion must be one of" in bad.get_data(as_text=True)


def test_uninitialised_database_gets_a_clear_503(tmp_path):
    from arena import create_app

    app = create_app({"TESTING": True, "SECRET_KEY": "x", "INSTANCE_PATH": str(tmp_path),
                      "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"})
    client = app.test_client()
    page = client.get("/leaderboard")
    assert page.status_code == 503 and "arena db upgrade" in page.get_data(as_text=True)
    api = client.get("/api/v1/leaderboard?criterion=preference")
    assert api.status_code == 503 and "arena db upgrade" in api.json["error"]
    with app.app_context():
        from arena.extensions import db

        db.engine.dispose()


def test_cant_decide_skips_without_a_vote_on_every_channel(client, app, web_campaign):
    """An escape from a pair one cannot judge. "Can't decide" closes the
    task without a vote (nothing moves) and shows the next; a vote on it afterwards is
    refused; the API has the same."""
    location = start_session(client).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    first = task_id(html)
    assert "Can't decide" in html
    html = client.post(f"/t/{first}/skip", data={"csrf_token": csrf_token(html)},
                       headers={"HX-Request": "true"}).get_data(as_text=True)
    assert task_id(html) not in (None, first) and "Question 2 of" in html
    again = client.post(f"/t/{first}", data={"csrf_token": csrf_token(html), "choice": "left"})
    assert again.status_code == 409
    body = client.post("/api/v1/sessions", json={}).json
    skipped = client.post(f"/api/v1/tasks/{body['tasks'][0]['task_id']}/skip",
                          headers={"Authorization": f"Bearer {body['voter_token']}"})
    assert skipped.status_code == 200 and skipped.json == {"skipped": True}
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Vote)) == 0
        assert db.session.scalar(select(func.count()).select_from(Task)
                                 .where(Task.skipped_at.is_not(None))) == 2


PRELOAD = re.compile(r'<link rel="preload" as="image" href="[^"]+" imagesrcset="([^"]+)"')
SRCSET = re.compile(r'<img src="[^"]+" srcset="([^"]+)"')


def test_each_card_preloads_the_next_tasks_images_only(client, web_campaign, app):
    """The card fetches ahead exactly the images the next card shows (the same per-task
    names and sizes), and nothing on the last card of a session."""
    app.config["VALIDATION_RATE"] = 0.0
    html = client.get(start_session(client).headers["Location"]).get_data(as_text=True)
    for position in (1, 2, 3):
        preloaded = PRELOAD.findall(html)
        assert len(preloaded) == (2 if position < 3 else 0)
        html = confirm_read_if_asked(client, html, **{"HX-Request": "true"})
        response = client.post(f"/t/{task_id(html)}", headers={"HX-Request": "true"},
                               data={"csrf_token": csrf_token(html), "choice": "left"})
        html = response.get_data(as_text=True)
        if position < 3:
            assert SRCSET.findall(html) == preloaded


REPORT_LINK = re.compile(r'href="(/t/\d+/report)"')


def test_report_an_image_without_javascript_and_with_htmx(client, web_campaign, app):
    """Report, choose the image and the reason, send: the next question, with thanks; a
    form missing either comes back with the reason and records nothing."""
    app.config["VALIDATION_RATE"] = 0.0
    location = start_session(client).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    form_url = REPORT_LINK.search(html).group(1)
    page = client.get(form_url)
    form = page.get_data(as_text=True)
    assert page.status_code == 200 and "Report an image" in form and "<html" in form
    incomplete = client.post(form_url, data={"csrf_token": csrf_token(form), "side": "left"})
    assert incomplete.status_code == 400
    assert "Choose the image and what is wrong" in incomplete.get_data(as_text=True)
    sent = client.post(form_url, data={"csrf_token": csrf_token(form), "side": "left",
                                       "reason": "broken"})
    assert sent.status_code == 303
    after = client.get(sent.headers["Location"]).get_data(as_text=True)
    assert "the report was sent" in after and "Question 2 of 3" in after
    # with htmx: the form and the next card come back as fragments
    html = confirm_read_if_asked(client, after)
    form_url = REPORT_LINK.search(html).group(1)
    fragment = client.get(form_url, headers={"HX-Request": "true"}).get_data(as_text=True)
    assert "<html" not in fragment and 'name="reason"' in fragment
    with app.app_context():  # (a voter reports an image once: the other one, if it is back)
        first = db.session.scalar(select(ImageReport.image_id))
        task = db.session.get(Task, int(form_url.split("/")[2]))
        side = "left" if task.right_image_id == first else "right"
    card = client.post(form_url, headers={"HX-Request": "true"},
                       data={"csrf_token": csrf_token(fragment), "side": side,
                             "reason": "offensive"}).get_data(as_text=True)
    assert "<html" not in card and "Question 3 of 3" in card
    with app.app_context():
        reports = db.session.scalars(select(ImageReport).order_by(ImageReport.id)).all()
        assert [(r.side, r.reason) for r in reports] == [("left", "broken"),
                                                          (side, "offensive")]
        assert db.session.scalar(select(func.count()).select_from(Vote)) == 0


def test_static_urls_carry_the_files_hash_and_the_mount_point(client, app):
    """asset(): the URL is built once per mount point and file, the same as url_for's."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256(Path(app.static_folder, "css/app.css").read_bytes()).hexdigest()
    for _ in range(2):  # (the second from the cache)
        assert f'href="/static/css/app.css?v={digest[:12]}"' in client.get("/").text
        mounted = client.get("/", base_url="http://localhost/arena/").text
        assert f'href="/arena/static/css/app.css?v={digest[:12]}"' in mounted


def test_next_session_with_htmx_is_its_first_card_in_place(client, web_campaign, app):
    """The card's "Next session" (htmx) gets the new session's first card, shown from now,
    and its address for the history; the landing's form still redirects to the page."""
    app.config["VALIDATION_RATE"] = 0.0
    htmx = {"HX-Request": "true"}
    location = start_session(client).headers["Location"]
    html = client.get(location).get_data(as_text=True)
    while task_id(html) is not None:
        html = confirm_read_if_asked(client, html, **htmx)
        html = client.post(f"/t/{task_id(html)}", headers=htmx, data={
            "csrf_token": csrf_token(html), "choice": "left"}).get_data(as_text=True)
    assert 'hx-post="/start"' in html
    response = client.post("/start", headers=htmx, data={"csrf_token": csrf_token(html)})
    body = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in body
    assert "Question 1 of 3" in body and 'id="card"' in body
    with app.app_context():
        newest = db.session.scalar(select(VotingSession).order_by(VotingSession.id.desc()))
        first, *rest = sorted(newest.tasks, key=lambda t: t.position)
        assert response.headers["HX-Push-Url"] == f"/s/{newest.public_id}"
        assert f'hx-post="/t/{first.id}"' in body
        assert first.shown_at is not None and all(t.shown_at is None for t in rest)
        assert db.session.scalar(select(func.count()).select_from(VotingSession)) == 2
    # the pushed address shows the same card as a page (a reload, a shared link)
    page = client.get(response.headers["HX-Push-Url"]).get_data(as_text=True)
    assert "<html" in page and f'hx-post="/t/{first.id}"' in page


def test_next_session_with_htmx_refused_is_a_card_not_a_page(client, web_campaign, app):
    htmx = {"HX-Request": "true"}
    html = client.get("/").get_data(as_text=True)
    bad = client.post("/start", headers=htmx, data={"csrf_token": csrf_token(html),
                                                    "criterion": "beauty"})
    body = bad.get_data(as_text=True)
    assert bad.status_code == 400 and "criterion must be one of" in body
    assert "<html" not in body and "About you" not in body
    with app.app_context():  # everything answered: the all-done card in the card's place
        db.session.execute(delete(Comparison))
        db.session.commit()
    done = client.post("/start", headers=htmx, data={"csrf_token": csrf_token(html)})
    body = done.get_data(as_text=True)
    assert "You have seen everything" in body and 'id="card"' in body and "<html" not in body
    assert "HX-Push-Url" not in done.headers
    page = client.post("/start", data={"csrf_token": csrf_token(html)}).get_data(as_text=True)
    assert "You have seen everything" in page and "<html" in page
