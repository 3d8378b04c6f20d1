"""Campaign pages: the list, and each campaign's progress (public, read-only)."""

from __future__ import annotations

from flask import Blueprint, render_template

from arena.campaigns import campaigns
from arena.campaigns.progress import public_progress
from arena.web.charts import bar_rows

bp = Blueprint("campaign", __name__, url_prefix="/campaigns")


@bp.get("/")
def index():
    return render_template("campaign/index.html",
                           campaigns=campaigns.summaries(public=True))


@bp.get("/<path:name>")
def show(name: str):
    report = public_progress(campaigns.get_published(name))
    charts = {label: bar_rows(counts) for label, counts in report.demographics.items()}
    return render_template("campaign/show.html", report=report, charts=charts)
