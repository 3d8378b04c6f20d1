"""The period's tick: what the rollup timer does each time it runs, in one service function
for every caller (``arena votes rollup``, the systemd timer, a job queue's schedule).

The rollups are brought to the public pages' cut-off; once a period the farm screen and the
cohort screen run over the votes before it (holding or sending voters' votes back to waiting
drops the rollups, built again at once); pairs the crowd has settled turn gold; the period's
public figures are taken if no page has yet; active and early-stopping campaigns decide where
their next votes go. Idempotent and safe to run twice at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flask import current_app
from sqlalchemy import select

from arena.analysis import rollups, suspects
from arena.extensions import db
from arena.models import Campaign


@dataclass
class Tick:
    rolled: list[rollups.Refreshed] = field(default_factory=list)
    screened: suspects.Screened | None = None  # None: SCREEN_HOLDS off
    consensus: dict[str, dict[str, int]] = field(default_factory=dict)  # campaign: criterion
    campaigns: int = 0  # whose public figures were taken
    allocations: list = field(default_factory=list)  # (campaign, decisions)


def tick(progress: Callable[[str, int], None] | None = None) -> Tick:
    """Run the period's work (see the module); ``progress(criterion, votes)`` as votes are
    rolled up."""
    from arena.campaigns import allocation, gold
    from arena.campaigns.progress import take_public_figures

    done = Tick(rolled=rollups.refresh(progress=progress))
    if current_app.config["SCREEN_HOLDS"]:
        done.screened = suspects.screen()
        done.rolled += rollups.refresh(progress=progress)  # (after a hold or a review)
    for campaign in db.session.scalars(select(Campaign).where(
            Campaign.published_at.is_not(None))).all():
        turned = gold.consensus(campaign)
        if any(turned.values()):
            done.consensus[campaign.name] = turned
    db.session.commit()
    done.campaigns = take_public_figures()
    done.allocations = allocation.refresh_all()
    return done
