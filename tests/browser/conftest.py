"""Real headless Chromium (Debian's /usr/bin/chromium) driven by Playwright, against the app
served by a real HTTP server in a thread, at a phone viewport with touch."""

from __future__ import annotations

import os
import shutil
import threading

import pytest
from werkzeug.serving import make_server

from tests.timing import seconds

CHROMIUM = os.environ.get("ARENA_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True,
         "device_scale_factor": 2}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        message = f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("ARENA_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def live_server(app):
    """Serve ``app`` on a free port; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=seconds(5))


@pytest.fixture
def phone(browser):
    """A phone page that fails the test on any console error or uncaught exception (a
    Content-Security-Policy violation, a missing file, a JavaScript error)."""
    context = browser.new_context(**PHONE)
    page = context.new_page()
    problems = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    yield page
    context.close()
    assert problems == []
