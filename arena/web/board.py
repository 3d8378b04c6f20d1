"""The public leaderboard page: per criterion, sliced, with intervals, chart and heatmap.

Intervals here are the instant (sandwich) ones, clustered by voter and prompt at once, as
the exports' and ``arena rank``'s default, so the page and the files agree.
"""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request
from flask_babel import gettext

from arena import criteria
from arena.analysis.leaderboard import rank_models
from arena.analysis.tallies import slice_from_args
from arena.campaigns.campaigns import summaries
from arena.catalog.prompts import categories
from arena.voting.voters import AGE_GROUPS, CONTINENTS, GENDERS
from arena.web.charts import heatmap, interval_chart
from arena.web.errors import renders_errors
from arena.web.requests import flag_arg, is_htmx

bp = Blueprint("board", __name__)


def _criterion() -> str:
    criterion = request.args.get("criterion", "preference")
    return criterion if criterion in criteria.table() else "preference"


def _render(ranking, error: str | None = None, status: int = 200):
    criterion = _criterion()
    context = {
        "criterion": criterion, "criteria": criteria.names(),
        "question": gettext(criteria.get(criterion).question),
        "ranking": ranking, "error": error, "args": request.args,
        "chart": interval_chart(ranking) if ranking else None,
        "heat": heatmap(ranking) if ranking else None,
        "continents": CONTINENTS, "age_groups": AGE_GROUPS, "genders": GENDERS,
        "categories": categories(),
        "campaigns": [c.name for c in summaries(public=True)],
    }
    html = render_template("analyst/_board.html" if is_htmx() else "analyst/leaderboard.html",
                           **context)
    response = current_app.make_response((html, status))
    response.headers["Vary"] = "HX-Request"
    return response


@bp.get("/leaderboard")
@renders_errors(lambda exc, status: _render(None, str(exc), status))
def leaderboard():
    """A bad filter comes back as the page with the reason above the filters."""
    return _render(rank_models(_criterion(), intervals="instant", include_idle=False,
                               slice_=slice_from_args(request.args),
                               poststratify=flag_arg("poststratify"), public=True))
