"""Campaign pages: the list, and each campaign's progress (public, read-only)."""

from __future__ import annotations

from flask import Blueprint, abort, render_template
from sqlalchemy import select

from .. import campaigns
from ..extensions import db
from ..models import Campaign
from ..voters import CONTINENTS

bp = Blueprint("campaign", __name__, url_prefix="/campaigns")


def bar_rows(counts: list[tuple[str, int]], width: int = 300, row: int = 24,
             label: int = 120) -> dict:
    """Horizontal bar geometry for an SVG chart (no inline styles under the CSP)."""
    top = max((n for _, n in counts), default=0) or 1
    bars = [{"label": CONTINENTS.get(name, name), "n": n, "y": i * row,
             "w": round((width - label - 40) * n / top, 1)} for i, (name, n) in enumerate(counts)]
    return {"bars": bars, "width": width, "height": max(len(bars) * row, row),
            "label_width": label}


@bp.get("/")
def index():
    rows = db.session.scalars(select(Campaign).order_by(Campaign.created_at.desc())).all()
    return render_template("campaign/index.html",
                           campaigns=[(c, campaigns.progress(c)) for c in rows])


@bp.get("/<path:name>")
def show(name: str):
    try:
        campaign = campaigns.get_campaign(name)
    except campaigns.CampaignError:
        abort(404)
    report = campaigns.progress(campaign)
    charts = {label: bar_rows(counts) for label, counts in report.demographics.items()}
    return render_template("campaign/show.html", report=report, charts=charts)
