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
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from arena.extensions import db


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


KEYS = 2**31  # shuffle keys are below this


def random_key() -> int:
    """A random 31-bit key; matchmaking breaks ties by starting at a random point of it."""
    return secrets.randbelow(KEYS)


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
    # browser cookies that signed in before this moment sign nobody in (accounts.signins)
    signed_out_at: Mapped[datetime | None] = mapped_column(DateTime)


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
    """A stored, re-encoded image. ``sha256`` of the stored bytes names its files in storage
    and is never shown to voters. Two rows share bytes only when a model uploaded bytes held
    already elsewhere: the copy is ``quarantined`` (kept out of comparisons and HYPE pools)."""

    __tablename__ = "image"
    __table_args__ = (UniqueConstraint("model_id", "prompt_id", "sha256"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("model.id"), index=True)
    prompt_id: Mapped[int | None] = mapped_column(ForeignKey("prompt.id"), index=True)
    # Gold-standard assets (validation pairs) belong to no model and never reach a ranking.
    is_real: Mapped[bool] = mapped_column(Boolean, default=False)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    quarantined: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # reported by voters (or removed by an operator): its comparisons are paused
    paused_at: Mapped[datetime | None] = mapped_column(DateTime)
    # a damaged copy made for a gold pair records the image it was made from
    source_id: Mapped[int | None] = mapped_column(ForeignKey("image.id"), index=True)
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
    # Admission: "open" (anyone who comes to the voter page) or "panel" (only participants of
    # a recruited crowd, through the join link; see arena.campaigns.panels).
    admission: Mapped[str] = mapped_column(String(10), default="open", server_default="open")
    join_key: Mapped[str | None] = mapped_column(String(32), unique=True)
    completion_code: Mapped[str | None] = mapped_column(String(64))
    return_url: Mapped[str | None] = mapped_column(String(500))
    panel_tasks: Mapped[int] = mapped_column(Integer, default=30, server_default="30")
    # How its votes are spread: "balanced" (every comparison to its target) or "active"
    # (where the ranking is unsure); early_stop: a model pair whose order is settled gets no
    # more votes (arena.campaigns.allocation)
    allocation: Mapped[str] = mapped_column(String(10), default="balanced",
                                            server_default="balanced")
    early_stop: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # the votes its comparisons held at the last allocation decision (None: none yet)
    allocated_votes: Mapped[int | None] = mapped_column(Integer)

    prompt_set: Mapped[PromptSet] = relationship()
    models: Mapped[list[GenModel]] = relationship(secondary=campaign_models,
                                                  order_by="GenModel.name")

    @property
    def criteria_list(self) -> list[str]:
        return [c for c in self.criteria.split(",") if c]

    @property
    def pool(self) -> int:
        """Which voters its comparisons go to: 0 for everyone, its id for its panel alone."""
        return self.id if self.admission == "panel" else 0


QUEUE_LEVELS = 4  # matchmaking's levels of a comparison's progress (Comparison.level)
STOPPED = -1  # the level of a pair an early-stopping campaign has settled: served to nobody


class Comparison(db.Model):
    """A pair of images shown for one criterion until it has ``target_votes`` votes.

    A validation (gold) comparison carries ``correct_image_id`` and never counts in rankings;
    it is served by the same least-progress rule as the others, so no more often.
    ``level`` = votes * QUEUE_LEVELS // target (the quarter of its target it has reached) is
    kept in the vote transaction so matchmaking finds the least-served comparisons through
    an index instead of scanning (arena.voting.matchmaking). It changes once every quarter
    of the target, not with every vote, so PostgreSQL updates the row in place (HOT) on
    most votes: a column in an index that moved on every vote made each vote write a new
    entry in all five of the table's indexes. ``STOPPED`` takes it out of the queue
    (arena.campaigns.allocation), votes still in flight leave it there.
    """

    __tablename__ = "comparison"
    __table_args__ = (
        # a pair is shown once per pool: to the open crowd, and again to a campaign's panel
        UniqueConstraint("pool", "criterion", "image_a_id", "image_b_id"),
        CheckConstraint("image_a_id <> image_b_id", name="distinct_images"),
        CheckConstraint("target_votes > 0", name="positive_target"),
        Index("ix_comparison_queue", "pool", "criterion", "is_validation", "level",
              "shuffle_key"),
        # a campaign's pairs, and its gold supply per criterion and kind counted within it
        # (after every gold answer at the cap: arena.campaigns.gold)
        Index("ix_comparison_campaign_gold", "campaign_id", "criterion", "gold_kind"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    criterion: Mapped[str] = mapped_column(String(20))
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaign.id"))
    # the voters it goes to: 0 = the open crowd, a campaign id = that campaign's panel
    pool: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    prompt_id: Mapped[int | None] = mapped_column(ForeignKey("prompt.id"), index=True)
    image_a_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    image_b_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    is_validation: Mapped[bool] = mapped_column(Boolean, default=False)
    correct_image_id: Mapped[int | None] = mapped_column(ForeignKey("image.id"))
    # how a gold pair was made: operator (hand-made), damaged (an image against a damaged
    # copy of itself) or swapped (an image against one made for another caption)
    gold_kind: Mapped[str | None] = mapped_column(String(10))
    target_votes: Mapped[int] = mapped_column(Integer, default=26)
    votes_count: Mapped[int] = mapped_column(Integer, default=0)
    level: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # times put in a session (answered or not): gold pairs are served by this, so a burst of
    # sessions nobody has answered yet does not keep landing on the same few
    issued: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    shuffle_key: Mapped[int] = mapped_column(Integer, default=random_key)
    # one of its images is paused (reported by voters, or held by an operator): issued to
    # nobody until an operator restores it (arena.voting.image_reports)
    paused: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

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
    # the voter's last paced action (a vote, a caption confirmed), in any session: the floor
    # of the next vote and the start of the next caption's reveal (arena.voting.pacing)
    last_action_at: Mapped[datetime | None] = mapped_column(DateTime)
    # a panel participant votes in one campaign's pool; 0 = the open crowd
    pool: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # keyed hash of (campaign, the panel's participant id): the panel id is the identity
    panel_key: Mapped[str | None] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # when the voter last changed their answers: the sliced rollups move their votes then
    profile_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    # a keyed hash of the network the voter was first seen on (arena.infra.network, never
    # the address): the farm screen looks at the voters of one network together
    network: Mapped[str | None] = mapped_column(String(32))
    # held out of the rankings by an operator (arena votes suspects --hold): every vote of
    # theirs, past and to come, is flagged ``held``
    held_at: Mapped[datetime | None] = mapped_column(DateTime)
    # what the screen found ("favours X (z 4.2 over 36 votes)"), for the operator's review
    held_reason: Mapped[str | None] = mapped_column(String(200))
    # released by an operator: the screen holds them no more (an operator still may)
    released_at: Mapped[datetime | None] = mapped_column(DateTime)
    # an operator reviewed the hold and kept the voter out: off the review queue
    hold_reviewed_at: Mapped[datetime | None] = mapped_column(DateTime)
    # when the voter earned trust (arena.voting.trust): from then on their votes, earlier
    # ones too, count in public figures; None while they are still earning it
    earned_at: Mapped[datetime | None] = mapped_column(DateTime)
    first_gold_at: Mapped[datetime | None] = mapped_column(DateTime)  # first gold answered right
    # a cohort review (arena.analysis.cohorts) holds their votes out of public figures until
    # an operator looks: they wait, like a new voter's; None when under none
    review_id: Mapped[int | None] = mapped_column(Integer, index=True)


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
        # the few tasks closed without a vote, per comparison: a campaign's progress counts
        # its skips through this alone (rather than every task of every comparison: 2M of
        # them in benchmarks/rank_db.py); partial, so that issuing a task writes no entry
        Index("ix_task_skipped", "comparison_id", "skipped_at",
              sqlite_where=text("skipped_at IS NOT NULL"),
              postgresql_where=text("skipped_at IS NOT NULL")),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"))
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"))
    comparison_id: Mapped[int] = mapped_column(ForeignKey("comparison.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    left_image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    right_image_id: Mapped[int] = mapped_column(ForeignKey("image.id"))
    issued_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # first time the task was on the voter's screen: a caption's reveal starts then
    shown_at: Mapped[datetime | None] = mapped_column(DateTime)
    # when the voter confirmed reading the caption (alignment), on the server's clock
    read_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)
    # set (with answered_at) when the voter skipped it ("can't decide"): no vote, and it does
    # not count towards a panel's completion
    skipped_at: Mapped[datetime | None] = mapped_column(DateTime)

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
        # covers the ranking aggregations: WHERE criterion, is_validation, flags GROUP BY
        # winner, loser [, voter] (the voter bootstrap's per-voter tally: 1.4 s -> 0.22 s over
        # 2M votes on SQLite, which no longer reads the table nor sorts), and the public
        # pages' cut-off too (WHERE created_at < the hour's: 828 -> 168 ms, without the table)
        Index("ix_vote_ranking", "criterion", "is_validation", "flags", "winner_model_id",
              "loser_model_id", "voter_id", "public_at"),
        Index("ix_vote_criterion_created", "criterion", "created_at"),
        # the votes since a ranking rollup's watermark (arena.analysis.rollups), and those
        # waiting for their voters' trust (public_at NULL)
        Index("ix_vote_criterion_public", "criterion", "public_at"),
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
    response_ms: Mapped[int | None] = mapped_column(Integer)  # as the page measured it
    # from the voter's previous action the server saw in the session (the task shown, the
    # caption confirmed, the previous answer) to this vote, on the server's clock
    server_ms: Mapped[int | None] = mapped_column(Integer)
    # why the vote does not count (arena.voting.flags); 0 = counted
    flags: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # the language the voter's page was in (arena.web.i18n): an alignment vote judges an
    # English caption, so analysts can keep only the votes of pages in a language
    language: Mapped[str | None] = mapped_column(String(8))
    # when the vote began to count in public figures (arena.analysis.published): its stamp
    # when its voter had earned trust, else the moment they did (arena.voting.trust); None
    # while it waits for that, or for a cohort review
    public_at: Mapped[datetime | None] = mapped_column(DateTime)


class EloRating(db.Model):
    """Online Elo of one model for one criterion: the vote log replayed to its criterion's
    checkpoint (:mod:`arena.voting.live_elo`)."""

    __tablename__ = "elo_rating"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("model.id"), primary_key=True)
    rating: Mapped[float] = mapped_column(Float)
    votes: Mapped[int] = mapped_column(Integer, default=0)
    wins: Mapped[int] = mapped_column(Integer, default=0)

    model: Mapped[GenModel] = relationship()


class EloCheckpoint(db.Model):
    """How far a criterion's rating rows have replayed the vote log: every counted vote up to
    ``through_vote_id``, in id order (:mod:`arena.voting.live_elo`)."""

    __tablename__ = "elo_checkpoint"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    through_vote_id: Mapped[int] = mapped_column(Integer, default=0)


class RankingRollup(db.Model):
    """One criterion's counted votes stamped before ``through``, summed for the rankings
    (:mod:`arena.analysis.rollups`): what the default ranking reads instead of the log."""

    __tablename__ = "ranking_rollup"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    through: Mapped[datetime] = mapped_column(DateTime)
    last_vote_id: Mapped[int] = mapped_column(Integer, default=0)  # the newest vote in it
    voters: Mapped[int] = mapped_column(Integer, default=0)
    # numpy .npz: cells (winner, loser model ids), pooled counts, voters' cross products
    moments: Mapped[bytes | None] = mapped_column(LargeBinary)
    refreshed_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class RollupVoterCell(db.Model):
    """A voter's counted votes for one ordered model pair in a :class:`RankingRollup`: what
    the rollup subtracts when that voter's next votes change their cross products."""

    __tablename__ = "rollup_voter_cell"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"), primary_key=True)
    winner_model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    loser_model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    votes: Mapped[int] = mapped_column(Integer)


class RollupPromptCell(db.Model):
    """A prompt's counted votes for one ordered model pair in a :class:`RankingRollup`: as
    :class:`RollupVoterCell`, for the prompts' cross products (two-way clustering)."""

    __tablename__ = "rollup_prompt_cell"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    prompt_id: Mapped[int] = mapped_column(Integer, primary_key=True)  # -1: none
    winner_model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    loser_model_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    votes: Mapped[int] = mapped_column(Integer)


class RollupSlice(db.Model):
    """One slice's counted votes (``field`` = ``value``, :mod:`arena.analysis.slices`) in
    its criterion's :class:`RankingRollup`, summed as the rollup's are, to the same
    watermark."""

    __tablename__ = "rollup_slice"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    field: Mapped[str] = mapped_column(String(20), primary_key=True)
    value: Mapped[str] = mapped_column(String(120), primary_key=True)
    voters: Mapped[int] = mapped_column(Integer, default=0)
    moments: Mapped[bytes | None] = mapped_column(LargeBinary)  # as RankingRollup's


class RollupSlicePrompt(db.Model):
    """A prompt's counted votes in a :class:`RollupSlice`: int64 rows (comparison id,
    winner id, loser id, 1 when the comparison's first image won, votes) as bytes (a
    prompt's few hundred in one row)."""

    __tablename__ = "rollup_slice_prompt"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    field: Mapped[str] = mapped_column(String(20), primary_key=True)
    value: Mapped[str] = mapped_column(String(120), primary_key=True)
    prompt_id: Mapped[int] = mapped_column(Integer, primary_key=True)  # -1: none
    cells: Mapped[bytes] = mapped_column(LargeBinary)


class RollupSliceMember(db.Model):
    """The slices a voter's votes of one criterion are rolled up in, by the voter's answers
    and trust as they stood then: where a change of answers takes them from."""

    __tablename__ = "rollup_slice_member"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    voter_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    age_group: Mapped[str | None] = mapped_column(String(10))
    gender: Mapped[str | None] = mapped_column(String(20))
    continent: Mapped[str | None] = mapped_column(String(2))
    trusted: Mapped[str | None] = mapped_column(String(3))


class RollupComparison(db.Model):
    """A comparison's votes that fill its quota (``flags == 0``) in its criterion's
    :class:`RankingRollup`: what the public counts read instead of the log."""

    __tablename__ = "rollup_comparison"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    comparison_id: Mapped[int] = mapped_column(ForeignKey("comparison.id"), primary_key=True)
    votes: Mapped[int] = mapped_column(Integer)
    # of them for the comparison's first image (image_a): agreement per criterion
    first_votes: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class RollupCampaignVoter(db.Model):
    """A voter's votes in one campaign and criterion of a :class:`RankingRollup`, of them
    on gold pairs and failed: what a campaign's progress counts its voters from."""

    __tablename__ = "rollup_campaign_voter"
    criterion: Mapped[str] = mapped_column(String(20), primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"), primary_key=True)
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"), primary_key=True)
    votes: Mapped[int] = mapped_column(Integer)
    gold: Mapped[int] = mapped_column(Integer)
    failed: Mapped[int] = mapped_column(Integer)


class PublishedFigures(db.Model):
    """Figures the public pages show (progress, the campaign list, the online Elo, an owner's
    vote counts), counted to the period's cut-off by its first request and read by every
    worker until the next: a vote moves none of them before then, so nobody learns from a
    reload whether their last answer was a gold pair (:mod:`arena.analysis.published`)."""

    __tablename__ = "published_figures"
    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    key: Mapped[int] = mapped_column(Integer, primary_key=True)  # a campaign's, a model's; 0
    period: Mapped[datetime] = mapped_column(DateTime, primary_key=True)  # when it began
    as_of: Mapped[datetime] = mapped_column(DateTime)  # they count what was stamped before it
    payload: Mapped[str] = mapped_column(Text)  # JSON


class CohortReview(db.Model):
    """Voters new together (first seen in one period, day or week, or counted from one
    period) whose votes moved the crowd's ranking beyond what voters like the crowd would
    (:mod:`arena.analysis.cohorts`): the fewest of them whose votes take the cohort back
    under the line wait out of public figures (``Voter.review_id``) until an operator
    releases them or keeps them out."""

    __tablename__ = "cohort_review"
    id: Mapped[int] = mapped_column(primary_key=True)
    criterion: Mapped[str] = mapped_column(String(20))
    kind: Mapped[str] = mapped_column(String(20))  # period, day, week, counted; "... busy"
    since: Mapped[datetime] = mapped_column(DateTime)  # the cohort's window
    until: Mapped[datetime] = mapped_column(DateTime)
    found_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    reason: Mapped[str] = mapped_column(String(300))  # the statistic past the line, in words
    evidence: Mapped[str] = mapped_column(Text)  # JSON: every statistic, the gaps it moved
    voters: Mapped[int] = mapped_column(Integer)  # waiting on this review
    votes: Mapped[int] = mapped_column(Integer)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime)
    decision: Mapped[str | None] = mapped_column(String(20))  # released, kept out


class ImageReport(db.Model):
    """A voter's report that an image in one of their tasks is broken, offensive or wrong in
    some other way. Not a vote: the task closes without one. Open until an operator
    restores the image or removes it (``resolution``)."""

    __tablename__ = "image_report"
    __table_args__ = (UniqueConstraint("voter_id", "image_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    image_id: Mapped[int] = mapped_column(ForeignKey("image.id"), index=True)
    voter_id: Mapped[int] = mapped_column(ForeignKey("voter.id"))
    task_id: Mapped[int] = mapped_column(ForeignKey("task.id"))
    side: Mapped[str] = mapped_column(String(5))  # which side the voter saw it on
    reason: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime)
    resolution: Mapped[str | None] = mapped_column(String(20))  # restored | removed

    image: Mapped[Image] = relationship()


class ApiToken(db.Model):
    """An analyst's API token. Only the SHA-256 of the token is stored; it is shown once."""

    __tablename__ = "api_token"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    role: Mapped[str] = mapped_column(String(20), default="analyst")
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)
    # browser cookies that signed in before this moment sign nobody in (accounts.signins)
    signed_out_at: Mapped[datetime | None] = mapped_column(DateTime)


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
    # every image and mask of the run is served padded to this many bytes (see presentation)
    pad_bytes: Mapped[int | None] = mapped_column(Integer)
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
    # keyed hash of the evaluator's network (arena.infra.network): a failed qualification
    # waits out its retry delay for the network, not only for the cookie
    network: Mapped[str | None] = mapped_column(String(32), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    passed: Mapped[bool | None] = mapped_column(Boolean)
    # why the stage is left out of the scores (e.g. "voided": too many voided trials)
    flag: Mapped[str | None] = mapped_column(String(20))

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
    # the exposure the server accepts: frames x frame_ms of a believable report
    actual_ms: Mapped[float | None] = mapped_column(Float)
    frames: Mapped[int | None] = mapped_column(Integer)  # as the page reported them
    frame_ms: Mapped[float | None] = mapped_column(Float)
    judged_real: Mapped[bool | None] = mapped_column(Boolean)
    correct: Mapped[bool | None] = mapped_column(Boolean)
    voided: Mapped[bool] = mapped_column(Boolean, default=False)
    void_reason: Mapped[str | None] = mapped_column(String(10))  # page | timing | repeat
    served_at: Mapped[datetime | None] = mapped_column(DateTime)  # first put on a page
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)

    image: Mapped[Image] = relationship()
