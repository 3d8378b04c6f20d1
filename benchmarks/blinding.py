"""The attack table: what a voter or evaluator can tell without looking at the pixels.

    .venv/bin/python benchmarks/blinding.py [--evaluators 6] [--sessions 60]

Builds, in a throwaway instance, the attack's situation: HYPE reals at 640x480 against fakes
of two models at 512x512 and 300x400, and an arena of the four demo models plus two owners'
models uploaded at 384x384 and 288x384. Then walks the pages as evaluators and voters do,
fetches every image, and reports for each channel the held-out accuracy of the best
one-feature rule (mean of 5 random halvings), next to the accuracy a coin reaches with
probability 1e-4 on as many cases. Byte length is reported beside the others: in the arena
it follows the content (a noisy model makes larger files at the same quality, as its
pixels show); HYPE pads every image of a run to one length, inside the image data, so the
sizes the file declares say nothing either. "pixels re-encoded" is the honest residual: a
script holding the decoded pixels can compress them itself; where it separates reals from
fakes, the pools differ in content and no blinding can hide that.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
from harness import scratch_dir
from PIL import Image as PILImage

from arena.infra.instance import upgrade_schema

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from arena import create_app
from arena.accounts import owners
from arena.campaigns import campaigns, demo, gold
from arena.catalog import images, ingest, registry
from arena.extensions import db
from arena.hype import runs
from arena.models import HypeTrial, Prompt, Task
from tests.security.attacks import (
    CSRF,
    HYPE_IMAGE,
    TRIAL_ID,
    attack,
    chance_ceiling,
    fetch,
)

BEFORE = {  # what the leaks gave before presentation was blinded
    "HYPE, real vs fake by width": "100/100 (every fake 384x384, every real not)",
    "arena, model by size": "two owners' models showed as 384x384 and 288x384",
    "URLs computed offline": "60 of 60 reals' URLs from the source files",
    "owner's hashes in task URLs": "5 of 180 URLs served to one voter",
}


def photo(rng, width, height, tint, grain=6) -> bytes:
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * 200 / width + tint[0]) % 255, (y * 180 / height + tint[1]) % 255,
                     np.full_like(x, tint[2])], axis=-1)
    pixels = (base + rng.normal(0, grain, (height, width, 3))).clip(0, 255).astype("uint8")
    buf = io.BytesIO()
    PILImage.fromarray(pixels).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def build(app, tmp: Path, rng) -> None:
    with app.app_context():
        upgrade_schema()
        demo.load_demo(n_prompts=8, images_per_model=2)
        gold.fill(campaigns.get_campaign(demo.DEMO_CAMPAIGN))
        prompts = db.session.scalars(db.select(Prompt.id).limit(8)).all()
        for name, (w, h), grain in (("Square", (384, 384), 4), ("Tall", (288, 384), 12)):
            owners.create_owner(f"owner {name}")
            model = registry.register_model(owners.get_owner(f"owner {name}"), name)
            for k in range(16):
                ingest.ingest_image(model, prompts[k % 8],
                                    photo(rng, w, h, (k * 13, 60, 100), grain), f"{k}.jpg")
        campaigns.publish(campaigns.create_campaign("Blind", "DrawBench", ["Square", "Tall"],
                                                    images_per_model=2))
        reals = tmp / "reals"
        reals.mkdir()
        for k in range(60):
            (reals / f"r{k}.jpg").write_bytes(photo(rng, 640, 480, (k * 7, 20, 90), 10))
        for name, (w, h) in (("GAN-A", (512, 512)), ("GAN-B", (300, 400))):
            owners.create_owner(f"owner {name}")
            model = registry.register_model(owners.get_owner(f"owner {name}"), name)
            for k in range(30):
                ingest.ingest_image(model, prompts[k % 8],
                                    photo(rng, w, h, (k * 11, 120, 40), 3), f"{k}.jpg")
        runs.import_reals(reals)
        runs.create_run("Audit", "infinity", ["GAN-A", "GAN-B"])


def hype_views(app, evaluators: int):
    seen = []
    for _ in range(evaluators):
        client = app.test_client()
        page = client.get("/hype/Audit").get_data(as_text=True)
        location = client.post("/hype/Audit/start", data={
            "csrf_token": CSRF.search(page)[1], "kind": "qualification"}).headers["Location"]
        for position in range(app.config["HYPE_QUALIFICATION_TRIALS"]):
            html = client.get(location).get_data(as_text=True)
            trial_id = int(TRIAL_ID.search(html)[1])
            with app.app_context():
                truth = "real" if db.session.get(HypeTrial, trial_id).is_real else "fake"
            seen.append(fetch(client, HYPE_IMAGE.search(html)[1], truth, position, pixels=True))
            client.post(location + "/answer", data={"csrf_token": CSRF.search(html)[1],
                                                    "trial_id": trial_id, "judged": "real"})
    return seen


def arena_views(app, sessions: int):
    seen = []
    client = app.test_client()
    for _ in range(sessions):
        body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
        for task in body["tasks"]:
            with app.app_context():
                row = db.session.get(Task, task["task_id"])
                truth = {s: (getattr(row, f"{s}_image").model.name
                             if getattr(row, f"{s}_image").model else "gold")
                         for s in ("left", "right")}
            for k, side in enumerate(("left", "right")):
                seen.append(fetch(client, task[side]["url"], truth[side], k, pixels=True))
    return seen


def gold_views(app, sessions: int, rng):
    """Sessions that each carry one gold pair (a damaged copy or a swapped pair): every image
    labelled by its task, and how often "the shortest task of the session" is the gold one."""
    app.config["VALIDATION_RATE"] = 1.0
    seen, picked, counted, pictures, per_task = [], 0, 0, 0, 0
    client = app.test_client()
    for _ in range(sessions):
        body = client.post("/api/v1/sessions", json={"criterion": "preference"}).json
        lengths, gold = [], []
        for task in body["tasks"]:
            with app.app_context():
                row = db.session.get(Task, task["task_id"])
                is_gold = row.comparison.is_validation
                size = int(task["left"]["url"].rsplit("/", 1)[1].split(".")[0])
                own = [len(images.presented_bytes(image, size))
                       for image in (row.left_image, row.right_image)]
                pictures += sum(own)
                per_task += 2 * max(own)
            label = "gold" if is_gold else "ordinary"
            views = [fetch(client, task[side]["url"], label, k, pixels=True)
                     for k, side in enumerate(("left", "right"))]
            seen += views
            lengths.append(max(v.length for v in views))
            gold.append(is_gold)
        if sum(gold) == 1:
            shortest = np.flatnonzero(np.array(lengths) == min(lengths))
            picked += gold[int(rng.choice(shortest))]  # (ties at random)
            counted += 1
    app.config["VALIDATION_RATE"] = 0.0
    return seen, picked, counted, (sum(v.length for v in seen) / pictures, per_task / pictures)


def report(title: str, seen, rng) -> None:
    results = attack(seen, rng)
    labels = sorted({s.label for s in seen})
    ceiling = chance_ceiling(len(seen) // 2, 1e-4)
    majority = max(np.mean([s.label == lab for s in seen]) for lab in labels)
    print(f"\n{title}: {len(seen)} images, labels {', '.join(labels)}; guessing the most "
          f"common label scores {majority:.1%}, chance reaches {ceiling:.1%} (p=1e-4)")
    sizes = sorted({(s.width, s.height) for s in seen})
    print(f"  served dimensions: {', '.join(f'{w}x{h}' for w, h in sizes)}; distinct byte "
          f"lengths: {len({s.length for s in seen})}")
    for name, acc in sorted(results.items(), key=lambda kv: -kv[1]):
        verdict = "above chance" if acc >= max(ceiling, majority + 0.1) else "chance"
        print(f"  {name:28s} {acc:6.1%}  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluators", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=60)
    args = parser.parse_args()
    tmp = scratch_dir("arena-blinding-")
    app = create_app({"INSTANCE_PATH": str(tmp), "SECRET_KEY": "bench",
                      "PSEUDONYM_KEY": "bench", "RATELIMIT_ENABLED": False,
                      "VALIDATION_RATE": 0.0, "HYPE_QUALIFICATION_TRIALS": 40,
                      "HYPE_INFINITY_TRIALS": 20,  # (the run must be completable to start)
                      "HYPE_QUALIFICATION_PASS": 0.0})
    rng = np.random.default_rng(7)
    build(app, tmp, rng)
    print("Before (the leak these tables check for):")
    for what, figure in BEFORE.items():
        print(f"  {what:30s} {figure}")
    report("HYPE qualification, real vs fake", hype_views(app, args.evaluators), rng)
    arena = arena_views(app, args.sessions)
    report("Arena, model vs model (4 demo models, 2 uploaded at 384x384 and 288x384)", arena,
           rng)
    pair = [s for s in arena if s.label in ("Square", "Tall")]
    report("Arena, the two uploaded models only", pair, rng)
    seen, picked, counted, grown = gold_views(app, args.sessions, rng)
    report("Arena, gold or ordinary task (every session with one gold pair)", seen, rng)
    print(f"  the shortest task of its session is the gold one: {picked} of {counted} "
          f"sessions ({picked / counted:.0%}; a third by chance)")
    print(f"  bytes served / the pictures' own: {grown[0]:.2f} (padded to the session's "
          f"longest; to each task's longer: {grown[1]:.2f})")


if __name__ == "__main__":
    main()
