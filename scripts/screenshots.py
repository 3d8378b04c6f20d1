"""Phone-sized screenshots of the voter pages, for looking at the UI (not for git).

    .venv/bin/python scripts/screenshots.py [OUT_DIR]   # default: screenshots/

Loads a small demo campaign into a throwaway instance, serves it on a free port and drives
Debian's chromium at 390x844.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright
from werkzeug.serving import make_server

from arena import create_app
from arena.campaigns import demo
from arena.infra.instance import upgrade_schema

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="arena-shots-"))
    app = create_app({"INSTANCE_PATH": str(tmp), "SECRET_KEY": "shots",
                      "PSEUDONYM_KEY": "shots", "VALIDATION_RATE": 0})
    with app.app_context():
        upgrade_schema()
        demo.load_demo(n_prompts=4, images_per_model=2)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                   has_touch=True, device_scale_factor=1).new_page()
        page.goto(base + "/")
        page.screenshot(path=out / "landing.png", full_page=True)
        page.get_by_text("About you").tap()
        page.screenshot(path=out / "landing-about-you.png", full_page=True)
        for criterion in ("preference", "coherence", "alignment"):
            page.goto(f"{base}/?criterion={criterion}")
            page.get_by_role("button", name="Start").tap()
            page.wait_for_url("**/s/*")
            if criterion == "alignment":
                page.wait_for_timeout(500)
                page.screenshot(path=out / "task-alignment-revealing.png", full_page=True)
                page.get_by_role("button", name="I have read the caption").tap(timeout=15000)
                page.locator("fieldset.pair:not([disabled])").wait_for()
            page.locator("label.choice").nth(0).tap()
            page.screenshot(path=out / f"task-{criterion}.png", full_page=True)
            if criterion == "coherence":  # the report form, and back to the same task
                page.get_by_role("link", name="Report an image").tap()
                page.get_by_role("heading", name="Report an image").wait_for()
                page.screenshot(path=out / "report-image.png", full_page=True)
                page.get_by_role("link", name="Back").tap()
                page.locator("form.task").wait_for()
        for _ in range(2):
            page.get_by_role("button", name="Continue").tap()
            page.wait_for_timeout(300)
            if page.get_by_role("button", name="I have read the caption").count():
                page.get_by_role("button", name="I have read the caption").tap(timeout=15000)
                page.locator("fieldset.pair:not([disabled])").wait_for()
            if page.locator("label.choice").count():
                page.locator("label.choice").nth(1).tap()
        page.get_by_role("button", name="Continue").tap()
        page.get_by_text("Thank you!").wait_for()
        page.screenshot(path=out / "done.png", full_page=True)
        browser.close()
    server.shutdown()
    print(f"screenshots in {out}/")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots"))
