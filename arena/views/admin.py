"""Operator pages: define and publish campaigns, let models join, add gold pairs.

Sign in with an operator token (``arena token create NAME --role operator``).
"""

from __future__ import annotations

from functools import wraps

from flask import Blueprint, redirect, render_template, request, session, url_for
from sqlalchemy import select

from .. import campaigns, tokens
from ..config import CRITERIA
from ..extensions import db, limiter
from ..images import ImageRejected
from ..models import ApiToken, Campaign, GenModel, PromptSet

bp = Blueprint("admin", __name__, url_prefix="/admin")


def _operator():
    token_id = session.get("operator")
    row = db.session.get(ApiToken, token_id) if token_id else None
    return row if row is not None and row.revoked_at is None and row.role == "operator" else None


def operator_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        if _operator() is None:
            session.pop("operator", None)
            return redirect(url_for("admin.home"))
        return view(*args, **kwargs)

    return wrapped


def _page(error=None, notice=None, status=200):
    sets = sorted(set(db.session.scalars(select(PromptSet.name)))
                  | set(campaigns.SHIPPED_SETS))
    return render_template(
        "admin/home.html", error=error, notice=notice, prompt_sets=sets, criteria=CRITERIA,
        models=db.session.scalars(select(GenModel).order_by(GenModel.name)).all(),
        campaigns=db.session.scalars(select(Campaign).order_by(Campaign.created_at.desc())).all(),
    ), status


@bp.get("/")
def home():
    if _operator() is None:
        return render_template("admin/sign_in.html")
    return _page()


@bp.post("/sign-in")
@limiter.limit("20/hour")
def sign_in():
    row = tokens.check_token((request.form.get("token") or "").strip(), role="operator")
    if row is None:
        return render_template("admin/sign_in.html", error="Not a valid operator token."), 401
    session.clear()
    session["operator"] = row.id
    return redirect(url_for("admin.home"), 303)


@bp.post("/sign-out")
def sign_out():
    session.pop("operator", None)
    return redirect(url_for("admin.home"), 303)


def _act(fn, notice: str):
    try:
        result = fn()
    except (campaigns.CampaignError, ImageRejected, ValueError) as exc:
        db.session.rollback()
        return _page(error=str(exc), status=422)
    return _page(notice=notice.format(result=result))


@bp.post("/campaigns")
@operator_required
def create():
    form = request.form

    def make():
        return campaigns.create_campaign(
            form.get("name", ""), form.get("prompt_set", ""), form.getlist("models"),
            form.getlist("criteria"), int(form.get("images_per_model") or 4),
            int(form.get("target_votes") or 26)).name

    return _act(make, "Created {result}. Publish it when the models have their images.")


@bp.post("/campaigns/<int:campaign_id>/publish")
@operator_required
def publish(campaign_id: int):
    campaign = db.get_or_404(Campaign, campaign_id)
    return _act(lambda: campaigns.publish(campaign),
                f"Published {campaign.name}: {{result}} comparisons added.")


@bp.post("/campaigns/<int:campaign_id>/models")
@operator_required
def add_model(campaign_id: int):
    campaign = db.get_or_404(Campaign, campaign_id)
    return _act(lambda: campaigns.add_model(campaign, request.form.get("model", "")),
                f"Model joined {campaign.name}: {{result}} comparisons added.")


@bp.post("/campaigns/<int:campaign_id>/gold")
@operator_required
def add_gold(campaign_id: int):
    campaign = db.get_or_404(Campaign, campaign_id)
    correct, wrong = request.files.get("correct"), request.files.get("wrong")
    if correct is None or wrong is None:
        return _page(error="Choose both images.", status=422)
    prompt_id = request.form.get("prompt_id") or None
    return _act(lambda: campaigns.add_gold_pair(
        campaign, request.form.get("criterion", ""), correct.read(), wrong.read(),
        int(prompt_id) if prompt_id else None, names=(correct.filename, wrong.filename)).id,
        f"Gold pair {{result}} added to {campaign.name}.")
