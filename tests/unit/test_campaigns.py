import io
from datetime import timedelta

import numpy as np
import pytest
from PIL import Image
from sqlalchemy import func, select, text

from arena.analysis import published
from arena.campaigns import campaigns
from arena.campaigns.progress import progress
from arena.catalog import ingest
from arena.catalog.images import ImageRejected
from arena.errors import Conflict, Invalid, NotFound
from arena.extensions import db
from arena.models import Comparison, Prompt, utcnow
from arena.voting import image_reports, matchmaking, tasks
from tests.datasets import IMAGES
from tests.factories import answer, make_model, make_owner, new_voter, time_passes


@pytest.fixture
def three_models(ctx):
    return _three_models()


def _three_models():
    """DrawBench (shipped, imported on first use) and three models with images on two
    prompts: A and B with 2 images each, C with 1."""
    owner, _ = make_owner("o")
    models = {name: make_model(name, owner) for name in ("A", "B", "C")}
    campaign = campaigns.create_campaign("Bench", "DrawBench", ["A", "B"], images_per_model=1)
    prompt_ids = db.session.scalars(select(Prompt.id).order_by(Prompt.id).limit(2)).all()
    k = 0
    for pid in prompt_ids:
        for name, count in (("A", 2), ("B", 2), ("C", 1)):
            for _ in range(count):
                data = _distinct_png(k)
                assert ingest.ingest_image(models[name], pid, data, f"{pid}_{k}.png").ok
                k += 1
    return campaign, prompt_ids


def _distinct_png(k: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 32), (k * 37 % 256, k * 91 % 256, 120)).save(buf, "PNG")
    return buf.getvalue()


def count(**where):
    query = select(func.count()).select_from(Comparison)
    for key, value in where.items():
        query = query.where(getattr(Comparison, key) == value)
    return db.session.scalar(query)


def test_nothing_reaches_voters_before_publishing(three_models):
    assert count() == 0
    campaign, _ = three_models
    # A vs B, first image of each (images_per_model=1), 2 prompts, 3 criteria
    assert campaigns.publish(campaign) == 6
    assert count(campaign_id=campaign.id, is_validation=False) == 6
    # and a first supply of gold pairs made from the campaign's own images
    assert {c.criterion for c in db.session.scalars(select(Comparison).where(
        Comparison.is_validation))} == {"preference", "coherence", "alignment"}
    total = count()
    assert campaigns.publish(campaign) == 0 and count() == total  # idempotent


@pytest.mark.postgres
def test_publishing_refreshes_the_planner_statistics_on_postgresql(pg_app):
    """The comparisons just built are analysed at once: without it the gold pick was
    planned for one candidate and walked the voter's tasks once per gold pair until
    autovacuum came by (p99 36 ms per session in benchmarks/request_cost.py)."""
    def planner_rows() -> float:
        return db.session.scalar(text(
            "SELECT reltuples FROM pg_class WHERE relname = 'comparison'"))

    with pg_app.app_context():
        campaign, _ = _three_models()
        assert planner_rows() <= 0  # never analysed (-1 since PostgreSQL 14)
        campaigns.publish(campaign)
        assert count() > 6
        assert planner_rows() == count()


def test_joining_model_and_new_images_add_only_new_pairs(three_models):
    campaign, _ = three_models
    campaigns.publish(campaign)
    assert campaigns.add_model(campaign, "C") == 2 * 2 * 3  # C vs A and B, 2 prompts
    with pytest.raises(Conflict, match="already takes part"):
        campaigns.add_model(campaign, "C")
    # raising the images per model adds the second images only
    campaign.images_per_model = 2
    db.session.commit()
    added = campaigns.publish(campaign)
    # per prompt: pairs among A2,B2,C1 across models = 2*2+2*1+2*1 = 8, minus 3 existing = 5
    assert added == 5 * 2 * 3


def test_new_pairs_bring_the_swapped_gold_they_want(three_models):
    """The swapped gold was made at publishing only: a model joining later doubled the
    ordinary pairs and left the gold served twice as often as they were, to be told apart
    by it (benchmarks/gold_frequency.py --supply-rate 0.25). Now the supply is topped up
    wherever pairs are added."""
    from arena.campaigns import gold
    from arena.models import Image as ImageRow

    campaign, _ = three_models
    campaigns.publish(campaign)

    def supply() -> tuple[int, int]:
        return gold._auto_gold(campaign.id, "alignment"), gold.wanted(campaign, "alignment")
    have, want = supply()
    assert have == want > 0
    before = db.session.scalar(select(func.max(Comparison.id)))
    campaigns.add_model(campaign, "C")
    have_after, want_after = supply()
    assert have_after == want_after > want
    # new pairs are served first, and each shows an image of C: so does each new gold pair
    # (gold of older images alone would be the pairs without one)
    newest = db.session.scalars(select(Comparison).where(
        Comparison.id > before, Comparison.gold_kind == "swapped")).all()
    assert len(newest) == want_after - want
    for pair in newest:
        models = {db.session.get(ImageRow, i).model.name for i in (pair.image_a_id,
                                                                  pair.image_b_id)}
        assert "C" in models and len(models) == 2, models


def test_bad_definitions(ctx):
    with pytest.raises(NotFound, match="no prompt set"):
        campaigns.create_campaign("x", "Nope", [])
    with pytest.raises(NotFound, match="no model named Ghost"):
        campaigns.create_campaign("x", "DrawBench", ["Ghost"])
    with pytest.raises(Invalid, match="criteria"):
        campaigns.create_campaign("x", "DrawBench", [], ["beauty"])
    empty = campaigns.create_campaign("y", "PartiPrompts", [])
    with pytest.raises(Conflict, match="exists already"):
        campaigns.create_campaign("y", "PartiPrompts", [])
    with pytest.raises(Conflict, match="at least two models"):
        campaigns.publish(empty)


def test_gold_pairs(three_models):
    campaign, prompt_ids = three_models
    pair = campaigns.add_gold_pair(campaign, "alignment", (IMAGES / "ok.png").read_bytes(),
                                   (IMAGES / "ok.jpg").read_bytes(), prompt_ids[0],
                                   names=("ok.png", "ok.jpg"))
    assert pair.is_validation and pair.correct_image_id in (pair.image_a_id, pair.image_b_id)
    with pytest.raises(Invalid, match="identical"):
        campaigns.add_gold_pair(campaign, "preference", (IMAGES / "ok.png").read_bytes(),
                                (IMAGES / "ok.png").read_bytes())
    with pytest.raises(ImageRejected):
        campaigns.add_gold_pair(campaign, "preference", b"junk", b"junk2")


def test_progress_is_accurate(three_models, ctx):
    campaign, _ = three_models
    campaigns.publish(campaign)
    campaigns.add_gold_pair(campaign, "preference", (IMAGES / "ok.png").read_bytes(),
                            (IMAGES / "ok.webp").read_bytes(), names=("ok.png", "ok.webp"))
    ctx.config["VALIDATION_RATE"] = 1.0
    rng = np.random.default_rng(0)
    cast = 0  # votes that count: not on gold, not after the voter failed a gold pair
    for country, right in (("KE", True), ("BR", False)):
        voter = new_voter({"country": country, "age_group": "18-29"})
        session = matchmaking.start_session(voter, rng, "preference")
        failed = False
        for task in session.tasks:
            gold = task.comparison.correct_image_id
            if gold is not None:
                pick_left = (task.left_image_id == gold) == right
                choice = "left" if pick_left else "right"
                failed = not right
            else:
                choice = "left"
                cast += not failed
            answer(voter, task, choice)
    report = progress(campaign)
    pref = next(c for c in report.criteria if c["criterion"] == "preference")
    assert pref == {"criterion": "preference", "comparisons": 2, "collected": cast,
                    "needed": 2 * 26, "skipped": 0}
    assert report.needed_total == 6 * 26 and report.votes_total == cast
    assert sum(p["votes"] for p in report.pairs) == cast
    assert {p["models"] for p in report.pairs} == {"A vs B"}
    assert report.voters == 2
    assert dict(report.demographics["continent"]) == {"AF": 1, "SA": 1}
    pairs = count(campaign_id=campaign.id, is_validation=True)
    assert pairs > 1  # the hand-made one and those made from the campaign's images
    assert report.validation == {"pairs": pairs, "voters": 2, "passed": 1, "failed": 1}
    assert report.votes_per_hour > 0 and report.eta_hours > 0
    later = progress(campaign, now=utcnow() + timedelta(days=2))
    assert later.votes_per_hour is None and later.eta_hours is None


def test_skips_and_reports_are_counted_per_comparison(three_models, ctx):
    campaign, _ = three_models
    campaigns.publish(campaign)
    ctx.config["VALIDATION_RATE"] = 0.0
    rng = np.random.default_rng(1)
    closed: dict[int, int] = {}
    reported: dict[int, int] = {}
    for i in range(6):
        voter = new_voter()
        session = matchmaking.start_session(voter, rng, "preference")
        first, *rest = session.tasks
        if i % 2:
            image_reports.report(voter, first.id, "left", "broken")
            reported[first.comparison_id] = reported.get(first.comparison_id, 0) + 1
        else:
            tasks.skip(voter, first.id)
        closed[first.comparison_id] = closed.get(first.comparison_id, 0) + 1
        for task in rest:
            answer(voter, task, "left")
    report = progress(campaign)
    pref = next(c for c in report.criteria if c["criterion"] == "preference")
    assert pref["skipped"] == report.skips_total == 6
    assert sum(p["skipped"] for p in report.pairs) == 6 and report.most_skipped
    assert {s["id"]: s["skipped"] for s in report.most_skipped} == {
        cid: n for cid, n in closed.items() if n >= 2}
    for row in report.most_skipped:
        assert row["reported"] == reported.get(row["id"], 0)
        assert row["votes"] == db.session.get(Comparison, row["id"]).votes_count
    assert [s["skipped"] for s in report.most_skipped] == sorted(
        (s["skipped"] for s in report.most_skipped), reverse=True)


def test_campaign_list_totals_match_each_progress_page(three_models):
    campaign, _ = three_models
    campaigns.publish(campaign)
    campaigns.create_campaign("Draft", "DrawBench", ["A", "C"])
    rows = {s.name: s for s in campaigns.summaries()}
    assert rows["Draft"].published is False and rows["Draft"].needed == 0
    report = progress(campaign)
    bench = rows["Bench"]
    assert (bench.votes, bench.needed, bench.models, bench.prompt_set) == (
        report.votes_total, report.needed_total, 2, "DrawBench")


def test_progress_to_a_cut_off_counts_what_live_counts_before_it(any_app):
    """The public page's figures (votes before the cut-off, read from the log) and the live
    page's (the counters) are two ways to one count: with every vote, skip, report and gold
    answer stamped before the cut-off, they agree on everything but the gold pairs' count."""
    with any_app.app_context():
        _progress_both_ways(any_app)


def _progress_both_ways(app):
    campaign, _ = _three_models()
    campaigns.publish(campaign)
    campaigns.add_gold_pair(campaign, "preference", (IMAGES / "ok.png").read_bytes(),
                            (IMAGES / "ok.webp").read_bytes(), names=("ok.png", "ok.webp"))
    app.config["VALIDATION_RATE"] = 1.0
    rng = np.random.default_rng(2)
    for i, country in enumerate(("KE", "BR", "FR", None, "KE", "JP")):
        voter = new_voter({"country": country, "gender": "female" if i % 2 else None})
        session = matchmaking.start_session(voter, rng, "preference")
        first, *rest = session.tasks
        if i in (1, 4):
            image_reports.report(voter, first.id, "left", "broken")
        elif i in (0, 3):
            tasks.skip(voter, first.id)
        else:
            rest.insert(0, first)
        for task in rest:
            gold = task.comparison.correct_image_id
            wrong = gold is not None and i == 2
            pick_left = (task.left_image_id == gold) != wrong if gold else i % 3 == 0
            answer(voter, task, "left" if pick_left else "right")
    time_passes()
    live, cut = progress(campaign), progress(campaign, before=published.cutoff())
    assert cut.validation == {**live.validation, "pairs": None}
    assert live.validation["failed"] == 1 and live.skips_total >= 2 and live.most_skipped
    assert live.demographics["gender"] == [("female", 3), ("not given", 3)]
    for name in ("criteria", "pairs", "most_skipped", "skips_total", "votes_total",
                 "needed_total", "voters", "demographics"):
        assert getattr(cut, name) == getattr(live, name), name
