"""Phone-sized screenshots of the voter pages, for looking at the UI (not for git).

    .venv/bin/python scripts/screenshots.py [OUT_DIR]   # default: screenshots/

Loads a small demo campaign and simulated votes into a throwaway instance, serves it on a
free port and drives Debian's chromium at 360x640 and 430x932, in English and in Arabic
(right to left).
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

from arena import create_app
from arena.campaigns import demo
from arena.infra.instance import upgrade_schema

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


SIZES = [(360, 640), (430, 932)]  # the smallest and the largest phone the layout is held to
LANGUAGES = ["en", "ar"]  # left to right, and right to left


def walk(page, base: str, out: Path, tag: str) -> None:
    """The landing page, a task of each criterion, the report form, the thank-you card, the
    leaderboard, the campaign list and the demo campaign's page."""

    def shot(name: str, full_page: bool = False) -> None:
        page.wait_for_load_state("networkidle")
        page.screenshot(path=out / f"{name}-{tag}.png", full_page=full_page)

    page.goto(base + "/")
    shot("landing", full_page=True)
    for criterion in ("preference", "coherence", "alignment"):
        page.goto(f"{base}/?criterion={criterion}")
        page.locator("form.start-form button[type=submit]").tap()
        page.wait_for_url("**/s/*")
        card = page.locator("form.task")
        if criterion == "alignment":
            card.locator(".confirm-read").tap(timeout=15000)
            card.locator("fieldset.pair:not([disabled])").wait_for()
        card.locator("label.choice").nth(0).tap()
        shot(f"task-{criterion}")
        if criterion == "coherence":  # the report form, and back to the same task
            card.locator(".task-actions a").tap()
            page.locator("form.report").wait_for()
            shot("report-image")
            page.locator("form.report .task-actions a").tap()
            card.wait_for()
    for _ in range(2):
        card.locator("button[name=continue]").tap()
        page.wait_for_timeout(300)
        if card.locator(".confirm-read").count():
            card.locator(".confirm-read").tap(timeout=15000)
            card.locator("fieldset.pair:not([disabled])").wait_for()
        if card.locator("label.choice").count():
            card.locator("label.choice").nth(1).tap()
    card.locator("button[name=continue]").tap()
    page.locator("section.done").wait_for()
    shot("done")
    page.goto(f"{base}/leaderboard?criterion=preference")
    shot("leaderboard", full_page=True)
    page.goto(f"{base}/campaigns/")
    shot("campaigns")
    page.goto(f"{base}/campaigns/Demo:%20DrawBench")
    shot("campaign", full_page=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="arena-shots-"))
    app = create_app({"INSTANCE_PATH": str(tmp), "SECRET_KEY": "shots",
                      "PSEUDONYM_KEY": "shots", "VALIDATION_RATE": 0,
                      "REVEAL_WORD_MS": 40})
    with app.app_context():
        upgrade_schema()
        demo.load_demo(n_prompts=4, images_per_model=2)
        demo.simulate_votes(300, np.random.default_rng(2026))  # (a ranking to show)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for width, height in SIZES:
            for language in LANGUAGES:
                context = browser.new_context(
                    viewport={"width": width, "height": height}, is_mobile=True,
                    has_touch=True, device_scale_factor=1, locale=language)
                walk(context.new_page(), base, out, f"{width}x{height}-{language}")
                context.close()
        browser.close()
    server.shutdown()
    print(f"screenshots in {out}/")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots"))
