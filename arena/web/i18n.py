"""The voter's language: the pages voters and HYPE evaluators see, in the language they chose
with the switcher, else the best match of their browser's ``Accept-Language``, else English.

Flask-Babel does the work (its ``gettext``, ``lazy_gettext`` and template ``_()``); Arena
gives it the locale selector, the switcher route and the page's language and direction.
Translations live in ``arena/translations/<code>/LC_MESSAGES/messages.po`` (compiled to
``.mo`` beside them: ``scripts/translations.sh``); a test holds every catalogue complete and
its ``.mo`` current. Captions (prompts) are never translated: an alignment vote judges the
image against the English caption, and the vote records the page's language so analysts can
slice by it (``?language=en``).
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, Flask, redirect, request, session
from flask_babel import Babel, get_locale, gettext

from arena.config import LANGUAGES

DEFAULT = "en"

bp = Blueprint("i18n", __name__)


def select_language() -> str:
    """Flask-Babel's locale selector: the switcher's choice, else the browser's best match
    among ``LANGUAGES``, else English."""
    chosen = session.get("lang")
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES, default=DEFAULT)


def current_language() -> str:
    """The code of the language the current request is answered in (one of ``LANGUAGES``)."""
    return str(get_locale())


@dataclass(frozen=True)
class Country:
    code: str
    name: str


def country_names(countries) -> list[Country]:
    """``countries`` (with ``code`` and English ``name``) named in the page's language
    (Unicode CLDR names, through Babel), in that language's alphabetical order."""
    names = get_locale().territories
    named = [Country(c.code, names.get(c.code, c.name)) for c in countries]
    return sorted(named, key=lambda c: c.name.casefold())


@bp.get("/language")
def choose():
    """The switcher (a link per language): remember the language in the session cookie, then back
    to the page it was on (a path on this site only)."""
    code = request.args.get("lang", "")
    if code in LANGUAGES:
        session["lang"] = code
    back = request.args.get("next") or "/"
    if not back.startswith("/") or back.startswith("//") or "\\" in back:
        back = "/"
    return redirect(back, 303)


def _side_names(direction: str) -> dict[str, dict[str, str]]:
    """Each image's name as the voter sees it placed: side by side (in a right-to-left page
    the first is drawn on the right) or stacked; static/js/arena.js picks by the layout."""
    wide = [{"wide": gettext("Left image"), "enlarge_wide": gettext("Enlarge the left image")},
            {"wide": gettext("Right image"), "enlarge_wide": gettext("Enlarge the right image")}]
    if direction == "rtl":
        wide.reverse()
    tall = [{"tall": gettext("Top image"), "enlarge_tall": gettext("Enlarge the top image")},
            {"tall": gettext("Bottom image"),
             "enlarge_tall": gettext("Enlarge the bottom image")}]
    return {"left": wide[0] | tall[0], "right": wide[1] | tall[1]}


def init_app(app: Flask) -> None:
    Babel(app, locale_selector=select_language)
    app.register_blueprint(bp)

    @app.context_processor
    def language_context():
        code = current_language()
        direction = LANGUAGES.get(code, LANGUAGES[DEFAULT])[1]
        return {"lang": code, "lang_dir": direction, "languages": LANGUAGES,
                "side_names": _side_names(direction),
                "gender_names": {"female": gettext("Female"), "male": gettext("Male"),
                                 "other": gettext("Other")}}
