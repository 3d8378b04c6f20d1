"""Tables and their small invariants. Domain logic lives in the service modules."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .extensions import db


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def random_key() -> int:
    """A random 31-bit key; matchmaking breaks ties by starting at a random point of it."""
    return secrets.randbelow(2**31)


class PromptSet(db.Model):
    __tablename__ = "prompt_set"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    source: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Prompt(db.Model):
    __tablename__ = "prompt"
    __table_args__ = (UniqueConstraint("prompt_set_id", "position"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    prompt_set_id: Mapped[int] = mapped_column(ForeignKey("prompt_set.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)  # 1-based row number in the source file
    text: Mapped[str] = mapped_column(Text)
    category: Mapped[str | None] = mapped_column(String(120), index=True)

    prompt_set: Mapped[PromptSet] = relationship()


class Owner(db.Model):
    """A model owner: registers models and uploads their images with an API token, of which
    only the SHA-256 is stored."""

    __tablename__ = "owner"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


class GenModel(db.Model):
    """A generative model taking part in the arena (``model`` in the design)."""

    __tablename__ = "model"
    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("owner.id"), index=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    link: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Image(db.Model):
    """A stored, re-encoded image. ``sha256`` of the stored bytes is its public, opaque name."""

    __tablename__ = "image"
    id: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("model.id"), index=True)
    prompt_id: Mapped[int | None] = mapped_column(ForeignKey("prompt.id"), index=True)
    # Gold-standard assets (validation pairs) belong to no model and never reach a ranking.
    is_real: Mapped[bool] = mapped_column(Boolean, default=False)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    model: Mapped[GenModel | None] = relationship()
    prompt: Mapped[Prompt | None] = relationship()


campaign_models = db.Table(
    "campaign_model",
    db.Column("campaign_id", ForeignKey("campaign.id"), primary_key=True),
    db.Column("model_id", ForeignKey("model.id"), primary_key=True),
)


class Campaign(db.Model):
    """A benchmark run: a prompt set, criteria, models, images per model and votes wanted.

    Its comparisons exist only once it is published, so nothing is shown to voters before.
    """

    __tablename__ = "campaign"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    prompt_set_id: Mapped[int] = mapped_column(ForeignKey("prompt_set.id"))
    criteria: Mapped[str] = mapped_column(String(80))  # comma-separated
    images_per_model: Mapped[int] = mapped_column(Integer, default=4)
    target_votes: Mapped[int] = mapped_column(Integer, default=26)
    published_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    prompt_set: Mapped[PromptSet] = relationship()
    models: Mapped[list[GenModel]] = relationship(secondary=campaign_models,
                                                  order_by="GenModel.name")

    @property
    def criteria_list(self) -> list[str]:
        return [c for c in self.criteria.split(",") if c]


class Comparison(db.Model):
    """A pair of images shown for one criterion until it has ``target_votes`` votes.

    A validation (gold) comparison carries ``correct_image_id`` and never counts in rankings.
    ``progress`` = votes * 1000 // target is kept in the vote transaction so matchmaking can
    find the least-served comparisons through an index instead of scanning.
    """

    __tablename__ = "comparison"
    __table_args__ = (
        UniqueConstraint("criterion", "image_a_id", "image_b_id"),
        CheckConstraint("image_a_id <> image_b_id", name="distinct_images"),
        CheckConstraint("target_votes > 0", name="positive_target"),
        Index("ix_comparison_queue", "criterion", "is_validation", "progress", "shuffle_key"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    criterion: Mapped[str] = mapped_column(String(20))
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaign.id"), index=True)
    prompt_id: Mapped[int | None] = mapped_column(ForeignKey("prompt.id"), index=True)
    image_a_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    image_b_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    is_validation: Mapped[bool] = mapped_column(Boolean, default=False)
    correct_image_id: Mapped[int | None] = mapped_column(ForeignKey("image.id"))
    target_votes: Mapped[int] = mapped_column(Integer, default=26)
    votes_count: Mapped[int] = mapped_column(Integer, default=0)
    progress: Mapped[int] = mapped_column(Integer, default=0)
    shuffle_key: Mapped[int] = mapped_column(Integer, default=random_key)

    prompt: Mapped[Prompt | None] = relationship()
    image_a: Mapped[Image] = relationship(foreign_keys=[image_a_id])
    image_b: Mapped[Image] = relationship(foreign_keys=[image_b_id])


class Voter(db.Model):
    """An anonymous voter. ``public_id`` is the pseudonym used in URLs and exports; the API
    token is stored only as a SHA-256 hash. No IP address is ever stored."""

    __tablename__ = "voter"
    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    age_group: Mapped[str | None] = mapped_column(String(10))
    gender: Mapped[str | None] = mapped_column(String(20))
    country: Mapped[str | None] = mapped_column(String(2))
    continent: Mapped[str | None] = mapped_column(String(2))
    trust: Mapped[float] = mapped_column(Float, default=1.0)
    validations_passed: Mapped[int] = mapped_column(Integer, default=0)
    validations_failed: Mapped[int] = mapped_column(Integer, default=0)
    last_criterion: Mapped[str | None] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class VotingSession(db.Model):
    __tablename__ = "session"
    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"), index=True)
    criterion: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    voter: Mapped[Voter] = relationship()
    tasks: Mapped[list[Task]] = relationship(
        back_populates="session", order_by="Task.position"
    )


class Task(db.Model):
    """One comparison issued to one voter, with its left/right order fixed at issue time."""

    __tablename__ = "task"
    __table_args__ = (
        UniqueConstraint("voter_id", "comparison_id"),
        UniqueConstraint("session_id", "position"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"))
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"))
    comparison_id: Mapped[int] = mapped_column(ForeignKey("comparison.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    left_image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    right_image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    issued_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)

    session: Mapped[VotingSession] = relationship(back_populates="tasks")
    comparison: Mapped[Comparison] = relationship()
    left_image: Mapped[Image] = relationship(foreign_keys=[left_image_id])
    right_image: Mapped[Image] = relationship(foreign_keys=[right_image_id])


class Vote(db.Model):
    """The vote log, source of truth for every derived number. One row per task at most.

    Winner and loser models are copied in so rankings aggregate with one GROUP BY.
    """

    __tablename__ = "vote"
    __table_args__ = (
        CheckConstraint("choice IN ('left', 'right')", name="choice_side"),
        # covers the ranking aggregation: WHERE criterion, is_validation GROUP BY winner, loser
        Index("ix_vote_ranking", "criterion", "is_validation", "winner_model_id",
              "loser_model_id"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id"), unique=True)
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"), index=True)
    comparison_id: Mapped[int] = mapped_column(ForeignKey("comparison.id"))
    criterion: Mapped[str] = mapped_column(String(20))
    choice: Mapped[str] = mapped_column(String(5))
    winner_image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    loser_image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    winner_model_id: Mapped[int | None] = mapped_column(ForeignKey("model.id"))
    loser_model_id: Mapped[int | None] = mapped_column(ForeignKey("model.id"))
    is_validation: Mapped[bool] = mapped_column(Boolean, default=False)
    correct: Mapped[bool | None] = mapped_column(Boolean)
    response_ms: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class EloRating(db.Model):
    """Online Elo of one model for one criterion, updated in each vote's transaction."""

    __tablename__ = "elo_rating"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("model.id"), primary_key=True)
    rating: Mapped[float] = mapped_column(Float)
    votes: Mapped[int] = mapped_column(Integer, default=0)
    wins: Mapped[int] = mapped_column(Integer, default=0)

    model: Mapped[GenModel] = relationship()


class ApiToken(db.Model):
    """An analyst's API token. Only the SHA-256 of the token is stored; it is shown once."""

    __tablename__ = "api_token"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    role: Mapped[str] = mapped_column(String(20), default="analyst")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)


hype_run_models = db.Table(
    "hype_run_model",
    db.Column("run_id", ForeignKey("hype_run.id"), primary_key=True),
    db.Column("model_id", ForeignKey("model.id"), primary_key=True),
)


hype_run_masks = db.Table(
    "hype_run_mask",
    db.Column("run_id", ForeignKey("hype_run.id"), primary_key=True),
    db.Column("image_id", ForeignKey("image.id"), primary_key=True),
)


class HypeRun(db.Model):
    """A HYPE evaluation of some models against a pool of real images."""

    __tablename__ = "hype_run"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    mode: Mapped[str] = mapped_column(String(10))  # infinity | time
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    models: Mapped[list[GenModel]] = relationship(secondary=hype_run_models,
                                                  order_by="GenModel.name")
    # noise masks for HYPE-time, phase-scrambled from the run's own real and fake images
    masks: Mapped[list[Image]] = relationship(secondary=hype_run_masks)


class HypeStage(db.Model):
    """One evaluator's pass through a qualification or a scored task of a run. Its trials
    are drawn when it starts; real/fake labels never leave the server."""

    __tablename__ = "hype_stage"
    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("hype_run.id"), index=True)
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"), index=True)
    kind: Mapped[str] = mapped_column(String(15))  # qualification | infinity | time
    model_id: Mapped[int | None] = mapped_column(ForeignKey("model.id"))  # judged model
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    passed: Mapped[bool | None] = mapped_column(Boolean)

    run: Mapped[HypeRun] = relationship()


class HypeTrial(db.Model):
    __tablename__ = "hype_trial"
    __table_args__ = (UniqueConstraint("stage_id", "position"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    stage_id: Mapped[int] = mapped_column(ForeignKey("hype_stage.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    block: Mapped[int] = mapped_column(Integer, default=1)
    image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    is_real: Mapped[bool] = mapped_column(Boolean)
    requested_ms: Mapped[float | None] = mapped_column(Float)
    actual_ms: Mapped[float | None] = mapped_column(Float)
    judged_real: Mapped[bool | None] = mapped_column(Boolean)
    correct: Mapped[bool | None] = mapped_column(Boolean)
    voided: Mapped[bool] = mapped_column(Boolean, default=False)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)

    image: Mapped[Image] = relationship()
