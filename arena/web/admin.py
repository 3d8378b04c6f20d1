"""Operator pages: define and publish campaigns, let models join, add gold pairs, decide on
images voters reported.

Sign in with an operator token (``arena token create NAME --role operator``).
"""

from __future__ import annotations

import csv
import io
from functools import wraps

from flask import Blueprint, Response, redirect, render_template, request, session, url_for

from arena import criteria
from arena.accounts import signins, tokens
from arena.analysis import cohorts, suspects
from arena.campaigns import campaigns, gold
from arena.errors import Invalid
from arena.infra import jobs
from arena.voting import image_reports, live_elo
from arena.web import limits
from arena.web.errors import renders_errors
from arena.web.presenters import reported_image_url
from arena.web.requests import int_arg

bp = Blueprint("admin", __name__, url_prefix="/admin")


def operator_required(view):
    @wraps(view)
    def wrapped(*args, **kwargs):
        if _operator() is None:
            session.pop("operator", None)
            return redirect(url_for("admin.home"))
        return view(*args, **kwargs)

    return wrapped


def _operator():
    """The operator this browser is signed in as (a cookie from before their last sign-out
    counts for nothing), or None."""
    return signins.current(tokens.operator_by_id(session.get("operator")),
                           session.get("signed_in"))


def _page(error=None, notice=None, status=200):
    reported = [(item, reported_image_url(item)) for item in image_reports.queue()]
    return render_template("admin/home.html", error=error, notice=notice, criteria=criteria.names(),
                           reported=reported, reasons=image_reports.REASONS,
                           held=suspects.held(), releasing=suspects.releasing(),
                           jobs_waiting=jobs.pending(), elo_behind=live_elo.behind(),
                           reviews=cohorts.reviews(open_only=True),
                           **campaigns.admin_overview()), status


def _refused(exc, status, **_):
    return _page(error=str(exc), status=status)


@bp.get("/")
def home():
    if _operator() is None:
        return render_template("admin/sign_in.html")
    return _page(notice=session.pop("admin_notice", None))


def _done(notice: str):
    """After a change: back to the page with what happened (post, redirect, get: reloading
    the page shows it again instead of sending the form twice)."""
    session["admin_notice"] = notice
    return redirect(url_for("admin.home"), 303)


@bp.post("/sign-in")
@limits.per_network("RATE_LIMIT_SIGN_IN")
def sign_in():
    row = tokens.check_token((request.form.get("token") or "").strip(), role="operator")
    if row is None:
        return render_template("admin/sign_in.html", error="Not a valid operator token."), 401
    session.clear()
    session["operator"] = row.id
    session["signed_in"] = signins.begin()
    return redirect(url_for("admin.home"), 303)


@bp.post("/sign-out")
def sign_out():
    operator = _operator()
    if operator is not None:
        signins.end(operator)
    session.pop("operator", None)
    return redirect(url_for("admin.home"), 303)


@bp.post("/campaigns")
@operator_required
@renders_errors(_refused)
def create():
    form = request.form
    campaign = campaigns.create_campaign(
        form.get("name", ""), form.get("prompt_set", ""), form.getlist("models"),
        form.getlist("criteria"), int_arg("images_per_model", 4, 1, 16, form),
        int_arg("target_votes", 26, 1, 10_000, form), form.get("allocation", "balanced"),
        form.get("early_stop") == "1")
    return _done(f"Created {campaign.name}. Publish it when the models have their images.")


@bp.post("/campaigns/<int:campaign_id>/publish")
@operator_required
@renders_errors(_refused)
def publish(campaign_id: int):
    campaign = campaigns.get_campaign_by_id(campaign_id)
    added = campaigns.publish(campaign)
    gold.fill_in_background(campaign_id)
    return _done(f"Published {campaign.name}: {added} comparisons added. Its gold pairs are "
                 "being made in the background: their count is below.")


@bp.post("/campaigns/<int:campaign_id>/models")
@operator_required
@renders_errors(_refused)
def add_model(campaign_id: int):
    campaign = campaigns.get_campaign_by_id(campaign_id)
    added = campaigns.add_model(campaign, request.form.get("model", ""))
    return _done(f"Model joined {campaign.name}: {added} comparisons added.")


@bp.post("/campaigns/<int:campaign_id>/gold")
@operator_required
@renders_errors(_refused)
def add_gold(campaign_id: int):
    campaign = campaigns.get_campaign_by_id(campaign_id)
    correct, wrong = request.files.get("correct"), request.files.get("wrong")
    if correct is None or wrong is None:
        raise Invalid("Choose both images.")
    prompt_id = int_arg("prompt_id", 0, 0, 2**31 - 1, request.form) or None
    pair = campaigns.add_gold_pair(campaign, request.form.get("criterion", ""), correct.read(),
                                   wrong.read(), prompt_id,
                                   names=(correct.filename, wrong.filename))
    return _done(f"Gold pair {pair.id} added to {campaign.name}.")


@bp.post("/reports/<int:image_id>")
@operator_required
@renders_errors(_refused)
def resolve_report(image_id: int):
    resolution = request.form.get("resolution", "")
    closed = image_reports.resolve(image_id, resolution)
    outcome = ("restored: its comparisons are back with voters" if resolution == "restored"
               else "removed: it stays out of every comparison")
    return _done(f"Image {image_id} {outcome} ({closed} report(s) closed).")


@bp.post("/voters/<public_id>/release")
@operator_required
def release_voter(public_id: str):
    if not suspects.release_in_background(public_id):
        return _done("A release is being applied: try again when it is done.")
    return _done(f"Releasing {public_id}: their votes count again once the log is replayed "
                 "(seconds; reload this page).")


@bp.post("/voters/<public_id>/keep-out")
@operator_required
def keep_out_voter(public_id: str):
    reviewed = suspects.keep_out([public_id])
    return _done(f"{public_id} kept out: reviewed." if reviewed
                 else f"{public_id} is not held, or was reviewed already.")


@bp.post("/cohorts/<int:review_id>/release")
@operator_required
@renders_errors(_refused)
def release_cohort(review_id: int):
    released = cohorts.release(review_id)
    return _done(f"Cohort review {review_id}: {released} voter(s) released; their votes "
                 "count in public figures from the next period.")


@bp.post("/cohorts/<int:review_id>/keep-out")
@operator_required
@renders_errors(_refused)
def keep_out_cohort(review_id: int):
    kept = cohorts.keep_out(review_id)
    return _done(f"Cohort review {review_id}: {kept} voter(s) held out; they are listed "
                 "under the voters held out.")


@bp.get("/reports.csv")
@operator_required
def reports_csv():
    """Every image report (open and resolved), for the record."""
    rows = image_reports.report_rows()
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else ["id"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return Response(out.getvalue(), mimetype="text/csv", headers={
        "Content-Disposition": "attachment; filename=image-reports.csv"})
