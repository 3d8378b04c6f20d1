"""Image reports: a voter flags an image in one of their tasks as broken, offensive or wrong
in some other way; an operator restores it or removes it.

A report is not a vote: the task closes without one (as a skip does), so nothing in the
rankings moves. An image reported by ``REPORTS_TO_PAUSE`` different voters in good standing
(trust at least ``TRUST_FLOOR``) is paused at once: every comparison it is in is issued to
nobody, and no new comparison is made with it, until an operator restores it. A removed image
stays paused for good. A voter can report only an image shown in their own task, and each
image once, so one person cannot pause anything alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError

from arena.config import N_
from arena.errors import Invalid, NotFound
from arena.extensions import db
from arena.infra.database import retry_on_lock, write_transaction
from arena.models import Comparison, GenModel, Image, ImageReport, Voter, utcnow
from arena.voting.tasks import close_without_vote, owned_task

REASONS = {"broken": N_("It does not load or is broken"),
           "offensive": N_("It is offensive or disturbing"),
           "other": N_("Something else is wrong with it")}
RESOLUTIONS = ("restored", "removed")


class InvalidReport(Invalid):
    pass


@dataclass(frozen=True)
class Reported:
    """What a voter's report did."""

    recorded: bool  # False when this voter had reported the image before
    paused: bool  # the image is paused now (by this report or an earlier one)


def report(voter: Voter, task_id: int, side, reason, now: datetime | None = None) -> Reported:
    """Record ``voter``'s report of the image on ``side`` ("left" or "right") of their task
    ``task_id``, close the task without a vote (unless it was answered), and pause the image
    if enough voters reported it. Commits.

    Raises
    ------
    TaskNotFound, NotYourTask
        No such task, or one issued to another voter.
    InvalidReport
        An unknown side or reason.
    """
    if side not in ("left", "right"):
        raise InvalidReport("side must be 'left' or 'right'", field="side")
    if reason not in REASONS:
        raise InvalidReport(f"reason must be one of {', '.join(REASONS)}", field="reason")
    task = owned_task(voter, task_id)
    image_id = task.left_image_id if side == "left" else task.right_image_id
    now = now or utcnow()
    voter_id = voter.id

    def write() -> bool:
        with write_transaction():
            # the image's row first: reports of one image count one after another, so two
            # arriving together cannot both miss the one that completes the count
            paused_at = db.session.execute(select(Image.paused_at).where(Image.id == image_id)
                                           .with_for_update()).scalar_one()
            close_without_vote(task_id, now)
            db.session.add(ImageReport(image_id=image_id, voter_id=voter_id, task_id=task_id,
                                       side=side, reason=reason, created_at=now))
            db.session.flush()
            return paused_at is not None or _pause_if_reported(image_id, now)

    try:
        paused = retry_on_lock(write)
    except IntegrityError:  # this voter reported the image before (or twice at once)
        db.session.rollback()
        retry_on_lock(lambda: _close(task_id, now))  # the task closes all the same
        paused = db.session.scalar(select(Image.paused_at).where(Image.id == image_id))
        return Reported(recorded=False, paused=paused is not None)
    return Reported(recorded=True, paused=paused)


def _close(task_id: int, now: datetime) -> None:
    with write_transaction():
        close_without_vote(task_id, now)


def _pause_if_reported(image_id: int, now: datetime) -> bool:
    """In the caller's transaction: pause ``image_id`` if enough voters in good standing
    reported it since an operator last restored it. Returns whether it is paused."""
    cfg = current_app.config
    reporters = db.session.scalar(
        select(func.count(func.distinct(ImageReport.voter_id)))
        .join(Voter, Voter.id == ImageReport.voter_id)
        .where(ImageReport.image_id == image_id, ImageReport.resolved_at.is_(None),
               Voter.trust >= cfg["TRUST_FLOOR"]))
    if reporters < cfg["REPORTS_TO_PAUSE"]:
        return False
    _set_paused(image_id, now)
    return True


def _set_paused(image_id: int, at: datetime | None) -> None:
    db.session.execute(update(Image).where(Image.id == image_id).values(paused_at=at))
    db.session.execute(
        update(Comparison)
        .where(or_(Comparison.image_a_id == image_id, Comparison.image_b_id == image_id))
        .values(paused=at is not None))


@dataclass(frozen=True)
class ReportedImage:
    """One image in the operator's queue: its open reports, by reason."""

    image_id: int
    model: str | None
    reports: int
    reasons: dict[str, int]
    first_at: datetime
    paused_at: datetime | None
    task_id: int  # a task it was reported in: the operator sees it as that voter did
    side: str


def queue() -> list[ReportedImage]:
    """Images with open reports, paused ones first, then the most reported."""
    rows = db.session.execute(
        select(ImageReport.image_id, ImageReport.reason, ImageReport.created_at,
               ImageReport.task_id, ImageReport.side, Image.paused_at, Image.model_id)
        .join(Image, Image.id == ImageReport.image_id)
        .where(ImageReport.resolved_at.is_(None))
        .order_by(ImageReport.id)).all()
    names = dict(db.session.execute(select(GenModel.id, GenModel.name)).all())
    grouped: dict[int, dict] = {}
    for row in rows:
        entry = grouped.setdefault(row.image_id, {
            "image_id": row.image_id, "model": names.get(row.model_id), "reports": 0,
            "reasons": {}, "first_at": row.created_at, "paused_at": row.paused_at,
            "task_id": row.task_id, "side": row.side})
        entry["reports"] += 1
        entry["reasons"][row.reason] = entry["reasons"].get(row.reason, 0) + 1
    items = [ReportedImage(**entry) for entry in grouped.values()]
    return sorted(items, key=lambda r: (r.paused_at is None, -r.reports, r.image_id))


def resolve(image_id: int, resolution: str, now: datetime | None = None) -> int:
    """An operator's decision on a reported image: ``restored`` (it is fine: its
    comparisons go back to voters) or ``removed`` (it stays paused for good). Closes its open
    reports; returns how many. Commits.

    Raises
    ------
    InvalidReport
        An unknown resolution.
    NotFound
        No open report of that image.
    """
    if resolution not in RESOLUTIONS:
        raise InvalidReport(f"resolution must be one of {', '.join(RESOLUTIONS)}",
                            field="resolution")
    now = now or utcnow()

    def write() -> int:
        with write_transaction():
            closed = db.session.execute(
                update(ImageReport)
                .where(ImageReport.image_id == image_id, ImageReport.resolved_at.is_(None))
                .values(resolved_at=now, resolution=resolution)).rowcount
            if not closed:
                raise NotFound(f"no open report of image {image_id}")
            _set_paused(image_id, None if resolution == "restored" else now)
            return closed

    return retry_on_lock(write)


def report_rows() -> list[dict]:
    """Every report, oldest first, for the operator's CSV: no voter identity beyond the
    pseudonym."""
    rows = db.session.execute(
        select(ImageReport.id, ImageReport.image_id, Image.model_id, ImageReport.reason,
               ImageReport.side, ImageReport.created_at, ImageReport.resolved_at,
               ImageReport.resolution, Voter.public_id.label("voter"))
        .join(Image, Image.id == ImageReport.image_id)
        .join(Voter, Voter.id == ImageReport.voter_id)
        .order_by(ImageReport.id)).all()
    return [row._asdict() for row in rows]
