"""The voter's language: the pages voters and HYPE evaluators see, in the language they chose
with the switcher, else the best match of their browser's ``Accept-Language``, else English.

Translations live in ``arena/translations/<code>/LC_MESSAGES/messages.po`` (compiled to
``.mo`` beside them: ``scripts/translations.sh``); a test holds every catalogue complete and
its ``.mo`` current. Captions (prompts) are never translated: an alignment vote judges the
image against the English caption, and the vote records the page's language so analysts can
slice by it (``?language=en``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

from babel import Locale
from flask import Blueprint, Flask, g, redirect, request, session
from flask_babel import Babel, get_locale, get_translations
from jinja2 import pass_context
from markupsafe import Markup
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

from arena.config import LANGUAGES

DEFAULT = "en"

bp = Blueprint("i18n", __name__)


def select_language() -> str:
    chosen = session.get("lang")
    if chosen in LANGUAGES:
        return chosen
    return _best_match(request.headers.get("Accept-Language", ""))


@lru_cache(maxsize=256)
def _best_match(accept_language: str) -> str:
    """The language of ``LANGUAGES`` an ``Accept-Language`` header prefers, else English;
    kept per header (browsers send a few distinct ones): parsing it and matching it was
    about 30 µs of every request that shows text, a session's or an htmx card's, twice
    where a page renders (its catalogue and its ``lang`` attribute)."""
    accepted = parse_accept_header(accept_language, LanguageAccept)
    return accepted.best_match(LANGUAGES, default=DEFAULT) or DEFAULT


@dataclass(frozen=True)
class Country:
    code: str
    name: str


def country_names(countries) -> list[Country]:
    """``countries`` (with ``code`` and English ``name``) named in the page's language
    (Unicode CLDR names, through Babel), in that language's alphabetical order."""
    locale = get_locale()
    names = locale.territories if locale is not None else {}
    named = [Country(c.code, names.get(c.code, c.name)) for c in countries]
    return sorted(named, key=lambda c: c.name.casefold())


def current_language() -> str:
    """The code of the language the current request is answered in: Babel's choice
    (:func:`select_language`, every code of ``LANGUAGES`` a bare language), without building
    Babel's locale for it (a vote needs only the code: Babel's parse cost 1-2% of one)."""
    return select_language()


@bp.get("/language")
def choose():
    """The switcher (a plain form): remember the language in the session cookie, then back
    to the page it was on (a path on this site only)."""
    code = request.args.get("lang", "")
    if code in LANGUAGES:
        session["lang"] = code
    back = request.args.get("next") or "/"
    if not back.startswith("/") or back.startswith("//") or "\\" in back:
        back = "/"
    return redirect(back, 303)


@cache
def _locale(code: str) -> Locale:
    return Locale.parse(code)


def _selected_locale() -> Locale:
    """Babel's locale of :func:`select_language`, made once per language (Babel parsed it
    afresh on every request, looking for its data file on disk: 4% of a session request)."""
    return _locale(select_language())


def _translations():
    """The request's catalogue, looked up once per request (``g``): flask_babel looked it up
    for every string of a template (the context, the domain, the locale's name), a
    sixteenth of an htmx vote's server time (py-spy, benchmarks/request_cost.py --html)."""
    translations = g.get("arena_translations")
    if translations is None:
        translations = g.arena_translations = get_translations()
    return translations


def gettext(string: str, **variables) -> str:
    """flask_babel's ``gettext`` through the request's catalogue (:func:`_translations`)."""
    text = _translations().ugettext(string)
    return text % variables if variables else text


RENDERED_LIMIT = 4096  # strings kept rendered per language (templates hold a few hundred)


@pass_context
def template_gettext(context, string: str, **variables):
    """A template's ``_()`` and ``gettext()``: Jinja's new-style gettext (the translation
    made Markup where the template autoescapes, then always ``%``-formatted), with a string
    that has no variables rendered once per language and kept. Jinja's own went through
    two context calls, a Markup and a format for every string of every card: a twelfth of
    an htmx vote's server time (py-spy, benchmarks/request_cost.py --html)."""
    translations = _translations()
    autoescape = context.eval_ctx.autoescape
    if variables:
        text = translations.ugettext(string)
        return (Markup(text) if autoescape else text) % variables
    rendered = translations.__dict__.setdefault("arena_rendered", {})
    key = (string, autoescape)
    text = rendered.get(key)
    if text is None:
        text = translations.ugettext(string)
        text = (Markup(text) if autoescape else text) % {}
        if len(rendered) < RENDERED_LIMIT:
            rendered[key] = text
    return text


def init_app(app: Flask) -> None:
    Babel(app, locale_selector=_selected_locale)
    app.jinja_env.install_gettext_callables(
        gettext=lambda s: _translations().ugettext(s),
        ngettext=lambda s, p, n: _translations().ungettext(s, p, n),
        pgettext=lambda c, s: _translations().upgettext(c, s),
        npgettext=lambda c, s, p, n: _translations().unpgettext(c, s, p, n),
        newstyle=True)
    # (``_`` was an alias that looked ``gettext`` up in the context on every call)
    app.jinja_env.globals.update(gettext=template_gettext, _=template_gettext)
    app.register_blueprint(bp)

    @app.context_processor
    def language_context():
        code = current_language()
        return {"lang": code, "lang_dir": LANGUAGES.get(code, LANGUAGES[DEFAULT])[1],
                "languages": LANGUAGES,
                "side_names": {"left": gettext("Left image"), "right": gettext("Right image")},
                "gender_names": {"female": gettext("Female"), "male": gettext("Male"),
                                 "other": gettext("Other")}}
