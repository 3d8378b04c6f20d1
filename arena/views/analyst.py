"""The public leaderboard page: per criterion, sliced, with intervals, chart and heatmap.

Intervals here come from the Fisher information (instant); exports use the bootstrap.
"""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from ..config import CRITERIA, QUESTIONS
from ..extensions import db
from ..models import Prompt
from ..rankings import RankingError, rank_models, slice_from_args
from ..voters import AGE_GROUPS, CONTINENTS, GENDERS
from .charts import heatmap, interval_chart

bp = Blueprint("board", __name__)
@bp.get("/leaderboard")
def leaderboard():
    criterion = request.args.get("criterion", "preference")
    if criterion not in CRITERIA:
        criterion = "preference"
    error, ranking = None, None
    try:
        ranking = rank_models(criterion, intervals="fisher", slice_=slice_from_args(request.args),
                              poststratify=bool(request.args.get("poststratify")))
    except RankingError as exc:
        error = str(exc)
    categories = db.session.scalars(
        db.select(Prompt.category).where(Prompt.category.is_not(None)).distinct()
        .order_by(Prompt.category)).all()
    context = {
        "criterion": criterion,
        "criteria": CRITERIA,
        "question": QUESTIONS[criterion],
        "ranking": ranking,
        "error": error,
        "chart": interval_chart(ranking) if ranking else None,
        "heat": heatmap(ranking) if ranking else None,
        "args": request.args,
        "continents": CONTINENTS,
        "age_groups": AGE_GROUPS,
        "genders": GENDERS,
        "categories": categories,
    }
    partial = request.headers.get("HX-Request") == "true"
    html = render_template("analyst/_board.html" if partial else "analyst/leaderboard.html",
                           **context)
    response = current_app.make_response(html)
    response.headers["Vary"] = "HX-Request"
    return response
