"""The period's tick: what the rollup timer does each time it runs, in one service function
for every caller (``arena votes rollup``, the systemd timer, a job queue's schedule).

The rollups are brought to the public pages' cut-off; once a period the farm screen and the
cohort screen run over the votes before it (holding or sending voters' votes back to waiting
drops the rollups, built again at once); pairs the crowd has settled turn gold; the period's
public figures are taken if no page has yet; active and early-stopping campaigns decide where
their next votes go; the live Elo's checkpoint moves on (arena.voting.live_elo). Idempotent
and safe to run twice at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from flask import current_app
from sqlalchemy import select

from arena.analysis import cohorts, published, rollups, suspects
from arena.campaigns import allocation, gold
from arena.campaigns.progress import take_public_figures
from arena.extensions import db
from arena.models import Campaign
from arena.voting import live_elo


@dataclass(frozen=True)
class Screened:
    held: list[str]  # public ids held this period (arena.analysis.suspects)
    reviews: list[int]  # cohort reviews opened (arena.analysis.cohorts)


def _screened(payload: dict) -> Screened:
    return Screened(list(payload["held"]), list(payload["reviews"]))


def screen() -> Screened:
    """Once per period (whoever runs the tick first; stored with the period's figures), over
    the votes counted before the period's cut-off: the farm screen, then the cohort screen
    on what it left."""
    def run(before) -> dict:
        period = timedelta(seconds=float(current_app.config["PUBLISHED_PERIOD_S"]))
        held = suspects.screen(before)
        return {"held": held, "reviews": cohorts.screen(before, period)}

    return published.figures(published.SCREEN, published.ALL, run, screened=False,
                             load=_screened).payload


@dataclass
class Tick:
    rolled: list[rollups.Refreshed] = field(default_factory=list)
    screened: Screened | None = None  # None: SCREEN_HOLDS off
    consensus: dict[str, dict[str, int]] = field(default_factory=dict)  # campaign: criterion
    campaigns: int = 0  # whose public figures were taken
    allocations: list = field(default_factory=list)  # (campaign, decisions)
    elo: dict[str, int] = field(default_factory=dict)  # votes the live Elo's checkpoint took


def tick(progress: Callable[[str, int], None] | None = None) -> Tick:
    """Run the period's work (see the module); ``progress(criterion, votes)`` as votes are
    rolled up."""

    done = Tick(rolled=rollups.refresh(progress=progress))
    if current_app.config["SCREEN_HOLDS"]:
        done.screened = screen()
        done.rolled += rollups.refresh(progress=progress)  # (after a hold or a review)
    for campaign in db.session.scalars(select(Campaign).where(
            Campaign.published_at.is_not(None))).all():
        turned = gold.consensus(campaign)
        if any(turned.values()):
            done.consensus[campaign.name] = turned
    db.session.commit()
    done.campaigns = take_public_figures()
    done.allocations = allocation.refresh_all()
    done.elo = live_elo.advance()
    return done
