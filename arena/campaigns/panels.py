"""Recruited crowds: a campaign that admits only the participants of a paid panel.

A campaign in panel admission has a secret join link. The panel platform sends its
participants there with their ids in the query string, by its own conventions:

==========  ==================================================  ============================
platform    participant, study, session parameters              link template the operator
                                                                 pastes into the platform
==========  ==================================================  ============================
prolific    ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``     ``{{%PROLIFIC_PID%}}`` ...
mturk       ``workerId``, ``hitId``, ``assignmentId``          the HIT's external URL
toloka      ``worker_id``, ``pool_id``, ``assignment_id``      ``{{worker_id}}`` ...
generic     ``participant``, ``study``, ``session``            any other panel
==========  ==================================================  ============================

The participant id is the identity (the same id comes back as the same voter, whatever the
browser) and is kept only as a keyed hash. A participant votes on that campaign's pairs
alone; after ``panel_tasks`` answers the page shows the completion code and, with a return
URL (``{code}`` is filled in), sends them back to the platform, which pays them.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from flask import current_app
from sqlalchemy import func, select, update

from arena.errors import Conflict, Invalid, NotFound
from arena.extensions import db
from arena.models import Campaign, Comparison, Task, Voter, utcnow

PLATFORMS = {
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "mturk": ("workerId", "hitId", "assignmentId"),
    "toloka": ("worker_id", "pool_id", "assignment_id"),
    "generic": ("participant", "study", "session"),
}
LINK_TEMPLATES = {
    "prolific": "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                "&SESSION_ID={{%SESSION_ID%}}",
    "mturk": "",  # MTurk appends workerId, hitId and assignmentId to the external URL itself
    "toloka": "worker_id={{worker_id}}&pool_id={{pool_id}}&assignment_id={{assignment_id}}",
    "generic": "participant=PARTICIPANT_ID",
}
PARTICIPANT = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"


class PanelPreview(Conflict):
    """MTurk shows the page before a worker accepts the HIT: no participant yet."""


@dataclass(frozen=True)
class Standing:
    """How far a participant is: answers given, answers asked for, and the way out."""

    answered: int
    wanted: int
    code: str | None
    return_url: str | None

    @property
    def done(self) -> bool:
        return self.answered >= self.wanted


def open_panel(campaign: Campaign, completion_code: str, *, tasks: int = 30,
               return_url: str | None = None) -> str:
    """Admit only panel participants to ``campaign`` from now on; returns the join key.
    Its pairs move to the campaign's own pool. Commits.

    Raises Invalid for an empty code, a count out of range or a return URL that is not
    http(s)."""
    code = (completion_code or "").strip()
    if not code or len(code) > 64:
        raise Invalid("a panel needs a completion code (1-64 characters)",
                      field="completion_code")
    if not 1 <= tasks <= 10_000:
        raise Invalid("tasks per participant must be between 1 and 10000", field="tasks")
    if return_url and not re.match(r"^https?://", return_url):
        raise Invalid("the return URL must start with http:// or https://",
                      field="return_url")
    campaign.admission = "panel"
    campaign.join_key = campaign.join_key or secrets.token_urlsafe(16)
    campaign.completion_code, campaign.return_url = code, return_url or None
    campaign.panel_tasks = tasks
    _move_pairs(campaign)
    db.session.commit()
    return campaign.join_key


def close_panel(campaign: Campaign) -> None:
    """Back to open admission: the campaign's pairs go to the open crowd. Commits."""
    campaign.admission = "open"
    _move_pairs(campaign)
    db.session.commit()


def _move_pairs(campaign: Campaign) -> None:
    db.session.execute(update(Comparison).where(Comparison.campaign_id == campaign.id)
                       .values(pool=campaign.pool))


def join_link(campaign: Campaign, base_url: str, platform: str) -> str:
    """The link to paste into the panel platform's study settings."""
    if platform not in PLATFORMS:
        raise Invalid(f"platform must be one of {', '.join(PLATFORMS)}", field="platform")
    query = LINK_TEMPLATES[platform]
    return f"{base_url.rstrip('/')}/join/{campaign.join_key}" + (f"?{query}" if query else "")


def campaign_for(join_key: str) -> Campaign:
    """The panel campaign a join link opens. Raises NotFound (alike for a wrong key and a
    campaign no longer on a panel)."""
    campaign = db.session.scalar(select(Campaign).where(Campaign.join_key == join_key,
                                                        Campaign.admission == "panel"))
    if campaign is None or campaign.published_at is None:
        raise NotFound("This study link is not open.")
    return campaign


def participant_from(params) -> str:
    """The participant id in a join link's query, by any platform's convention.

    Raises PanelPreview (an MTurk preview) or Invalid (no usable participant id)."""
    if params.get("assignmentId") == MTURK_PREVIEW:
        raise PanelPreview("Accept the task on the study platform to start.")
    for names in PLATFORMS.values():
        value = (params.get(names[0]) or "").strip()
        if value:
            if not PARTICIPANT.match(value):
                raise Invalid("The participant id in this link is not valid.",
                              field=names[0])
            return value
    raise Invalid("Open this study from the study platform's page: the link carries your "
                  "participant id.", field="participant")


def admit(join_key: str, params, network: str | None = None) -> Voter:
    """The voter for the participant a join link names: the same one every time they come
    back, voting in the campaign's pool (a new one first seen on ``network``). Commits.

    Raises NotFound, PanelPreview or Invalid (see campaign_for, participant_from)."""
    campaign = campaign_for(join_key)
    participant = participant_from(params)
    key = _participant_key(campaign, participant)
    voter = db.session.scalar(select(Voter).where(Voter.panel_key == key))
    if voter is None:
        # (the panel platform verified the participant: trusted from the start)
        now = utcnow()
        voter = Voter(public_id=secrets.token_hex(8), panel_key=key, pool=campaign.id,
                      network=network, created_at=now, earned_at=now)
        db.session.add(voter)
        db.session.commit()
    return voter


def returning(join_key: str, params) -> bool:
    """Whether a join link names a participant who already has a voter (False for a link
    :func:`admit` would refuse)."""
    try:
        key = _participant_key(campaign_for(join_key), participant_from(params))
    except (NotFound, Invalid, PanelPreview):
        return False
    return db.session.scalar(select(Voter.id).where(Voter.panel_key == key)) is not None


def _participant_key(campaign: Campaign, participant: str) -> str:
    secret = current_app.config["PSEUDONYM_KEY"]
    return hmac.new(str(secret).encode(), f"{campaign.id}:{participant}".encode(),
                    hashlib.sha256).hexdigest()


def standing(voter: Voter) -> Standing | None:
    """A panel participant's progress towards the completion code; None for open voters."""
    if not voter.pool:
        return None
    campaign = db.session.get(Campaign, voter.pool)
    answered = db.session.scalar(select(func.count()).select_from(Task).where(
        Task.voter_id == voter.id, Task.answered_at.is_not(None), Task.skipped_at.is_(None)))
    done = answered >= campaign.panel_tasks
    url = campaign.return_url.replace("{code}", campaign.completion_code) \
        if done and campaign.return_url else None
    return Standing(answered, campaign.panel_tasks,
                    campaign.completion_code if done else None, url)


def completed_count(campaign: Campaign) -> int:
    """Participants who reached the completion code."""
    per_voter = (select(Task.voter_id).join(Voter, Voter.id == Task.voter_id)
                 .where(Voter.pool == campaign.id, Task.answered_at.is_not(None),
                        Task.skipped_at.is_(None))
                 .group_by(Task.voter_id)
                 .having(func.count() >= campaign.panel_tasks).subquery())
    return db.session.scalar(select(func.count()).select_from(per_voter))
