"""The voter pages in the voter's language: chosen from Accept-Language or the switcher,
Arabic right to left, every catalogue complete and compiled, and the language stored with
each vote so rankings can be sliced by it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po
from sqlalchemy import select

from arena.analysis.tallies import Slice, vote_filter
from arena.config import LANGUAGES
from arena.extensions import db
from arena.models import Vote

from .helpers import api_session, bearer, confirm_read_if_asked, csrf_token, start_session, task_id

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "arena" / "translations"
PLACEHOLDER = re.compile(r"%\(\w+\)s")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> dict[str, str]:
    """The msgids the code and templates use now (pybabel extract, as the script runs it)."""
    out = tmp_path_factory.mktemp("i18n") / "messages.pot"
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F",
                    "babel.cfg", "-k", "N_", "-k", "lazy_gettext", "--no-location",
                    "--omit-header", "-o", str(out), "."], cwd=ROOT, check=True,
                   capture_output=True)
    with out.open("rb") as f:
        return {m.id: m for m in read_po(f) if m.id}


def _plain(text):
    """A message's text as a hashable value (a plural's forms as a tuple)."""
    return text if isinstance(text, str) else tuple(text)


@pytest.mark.parametrize("code", [c for c in LANGUAGES if c != "en"])
def test_every_catalogue_is_complete_and_compiled(extracted, code):
    po = CATALOGUES / code / "LC_MESSAGES" / "messages.po"
    with po.open("rb") as f:
        catalogue = read_po(f)
    translated = {m.id: m.string for m in catalogue if m.id}
    missing = sorted(set(extracted) - {k for k, v in translated.items()
                                       if v and (isinstance(v, str) or all(v))})
    assert missing == [], f"{code}: untranslated (run scripts/translations.sh): {missing}"
    for msgid, text in translated.items():
        if isinstance(msgid, str):
            assert sorted(PLACEHOLDER.findall(text)) == sorted(PLACEHOLDER.findall(msgid)), (
                code, msgid)
        else:  # a plural: no form brings a placeholder of its own (a form may spell the
            # number out, as Arabic's for one and two do)
            for form in text:
                allowed = PLACEHOLDER.findall(msgid[1])
                assert all(p in allowed for p in PLACEHOLDER.findall(form)), (code, msgid, form)
    # the compiled catalogue holds what the .po says (its messages compared, not its bytes:
    # the header names the Babel version that wrote it)
    with po.with_suffix(".mo").open("rb") as f:
        compiled = {_plain(m.id): _plain(m.string) for m in read_mo(f) if m.id}
    expected = {_plain(m.id): _plain(m.string) for m in catalogue
                if m.id and m.string and not m.fuzzy}
    assert compiled == expected, (
        f"{code}: messages.mo is stale (bash scripts/translations.sh compile)")


def test_the_browsers_language_is_used_and_arabic_reads_right_to_left(client, web_campaign):
    spanish = client.get("/", headers={"Accept-Language": "es-MX,es;q=0.9,en;q=0.5"})
    html = spanish.get_data(as_text=True)
    assert '<html lang="es" dir="ltr">' in html and "Ayuda a clasificar" in html
    assert ">México</option>" in html  # country names in the page's language (CLDR)
    arabic = client.get("/", headers={"Accept-Language": "ar"}).get_data(as_text=True)
    assert '<html lang="ar" dir="rtl">' in arabic and "ساعد في ترتيب" in arabic
    chinese = client.get("/", headers={"Accept-Language": "zh-CN"}).get_data(as_text=True)
    assert '<html lang="zh"' in chinese
    hype = client.get("/hype/", headers={"Accept-Language": "pt-BR"}).get_data(as_text=True)
    assert "Real ou falsa?" in hype  # the HYPE evaluator pages too
    unknown = client.get("/", headers={"Accept-Language": "fi"}).get_data(as_text=True)
    assert '<html lang="en"' in unknown and "Help rank image generators" in unknown


def test_the_switcher_wins_over_the_browser_and_stays_on_this_site(client, web_campaign):
    chosen = client.get("/language?lang=hi&next=/%3Fcriterion%3Dalignment")
    assert chosen.status_code == 303 and chosen.headers["Location"] == "/?criterion=alignment"
    html = client.get("/", headers={"Accept-Language": "es"}).get_data(as_text=True)
    assert '<html lang="hi"' in html and 'hreflang="hi" aria-current="true"' in html
    # one tap: each language is a link to the switcher, back to this page
    links = re.findall(r'<a href="([^"]+)" lang="(\w+)" hreflang="\2"', html)
    assert sorted(code for _, code in links) == sorted(LANGUAGES)
    spanish = {code: href for href, code in links}["es"].replace("&amp;", "&")
    assert client.get(spanish).headers["Location"] in ("/", "/?")
    assert '<html lang="es"' in client.get("/").get_data(as_text=True)
    client.get("/language?lang=hi")
    for away in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        assert client.get(f"/language?lang=es&next={away}").headers["Location"] == "/"
    client.get("/language?lang=xx")  # not a language of ours: nothing changes
    assert '<html lang="es"' in client.get("/").get_data(as_text=True)


def test_a_session_in_arabic_and_its_votes_record_the_language(client, web_campaign, app):
    app.config.update(VALIDATION_RATE=0.0, REVEAL_WORD_MS=0)
    client.get("/language?lang=ar")
    html = client.get(start_session(client).headers["Location"]).get_data(as_text=True)
    assert "السؤال 1 من 3" in html and "متابعة" in html
    html = confirm_read_if_asked(client, html)
    client.post(f"/t/{task_id(html)}", data={"csrf_token": csrf_token(html), "choice": "left"})
    phone_app = app.test_client()  # (no cookies: the API follows Accept-Language)
    api = api_session(phone_app, {"criterion": "preference"}).json
    assert api["question"] == "Which image do you prefer?"
    spanish = phone_app.post("/api/v1/sessions", json={"criterion": "preference"},
                             headers={**bearer(api["voter_token"]), "Accept-Language": "es"})
    assert spanish.json["question"] == "¿Qué imagen prefieres?"
    phone_app.post(f"/api/v1/tasks/{spanish.json['tasks'][0]['task_id']}/vote",
                   json={"choice": "right"},
                   headers={**bearer(api["voter_token"]), "Accept-Language": "es"})
    with app.app_context():
        assert sorted(db.session.scalars(select(Vote.language))) == ["ar", "es"]
        only_es = db.session.execute(
            vote_filter("preference", Slice(language="es"), join_voter=False)).all()
        assert len(only_es) == 1


def test_refusals_and_error_pages_speak_the_voters_language(client, web_campaign):
    """The minor refused on the start form, and an error page (a session of someone else),
    in Indonesian; the service's own words stay below in English."""
    client.get("/language?lang=id")
    html = client.get("/").get_data(as_text=True)
    refused = client.post("/start", data={"csrf_token": csrf_token(html), "age_group": "0-17",
                                          "with_demographics": "1"})
    assert refused.status_code == 403
    assert "harus berusia 18 tahun" in refused.get_data(as_text=True)
    other = client.get("/s/not-a-session-of-yours").get_data(as_text=True)
    assert "Sesi ini tidak terbuka di browser ini" in other and "Mulai sesi baru" in other
    missing = client.get("/t/999999/report").get_data(as_text=True)  # the generic page
    assert "Tidak ditemukan" in missing or "bukan milik Anda" in missing
    # HTTP's own 404 says nothing its translated heading does not: no English line below
    nowhere = client.get("/no-such-page")
    assert nowhere.status_code == 404 and "Tidak ditemukan" in nowhere.get_data(as_text=True)
    assert 'lang="en"' not in nowhere.get_data(as_text=True).split("<main", 1)[1]
    # and under the slim bar a voter's pages show, not the site's menu
    assert '<header class="bar slim">' in nowhere.get_data(as_text=True)
    assert 'class="nav"' not in nowhere.get_data(as_text=True)


TEMPLATES = [  # what the pages hold: plain strings, strings with variables, a literal %
    '{{ _("Caption") }}|{{ _("Question %(position)s of %(total)s", position=p, total=2) }}',
    '{{ gettext("Close") }} {{ _("100%% sure") }} {{ _("Other image") }}',
    '{% autoescape false %}{{ _("Question %(position)s of %(total)s", position=p, total=1) '
    '}}{{ _("Caption") }}{% endautoescape %}',
    '{% trans %}Caption{% endtrans %} {% trans n=p %}Question {{ n }} of 3{% endtrans %}',
]


@pytest.mark.parametrize("code", ["en", "es", "ar"])
def test_template_strings_render_as_jinjas_own_gettext_renders_them(app, code):
    """Templates' strings through Flask-Babel against Jinja's own new-style gettext on the
    same catalogue: the same text in each language, and a variable escaped."""
    from flask import render_template_string
    from flask_babel import get_translations
    from jinja2 import Environment

    hostile = "<script>alert(1)</script>"
    with app.test_request_context(headers={"Accept-Language": code}):
        reference = Environment(extensions=["jinja2.ext.i18n"], autoescape=True)
        reference.install_gettext_translations(get_translations(), newstyle=True)
        for source in TEMPLATES:
            for position in (1, hostile, 2):
                expected = reference.from_string(source).render(p=position)
                assert render_template_string(source, p=position) == expected
        assert "&lt;script&gt;" in render_template_string(TEMPLATES[0], p=hostile)
        translated = render_template_string('{{ _("Caption") }}')
        assert (translated == "Caption") == (code == "en")
