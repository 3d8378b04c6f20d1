"""Every page at 360 px, in real Chromium, as each kind of user meets it (voter, analyst,
model owner, operator), with something in every list: nothing wider than the phone (a wide
table scrolls inside its own labelled region, the menu along its one line) and every
control and standalone link at least 44 px tall (a link inside a sentence is exempt, as
WCAG 2.5.8 says), every checkbox 20 px or more in a label 44 px tall, and no two landmarks of
a page named alike."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select

from arena.accounts import tokens
from arena.analysis import suspects
from arena.campaigns import demo
from arena.extensions import db
from arena.models import Task, Voter
from arena.voting import image_reports
from tests.factories import make_model, make_owner

# what sticks out of the page, and the controls too small to tap (not a link in a sentence)
AUDIT = """() => {
  const width = document.documentElement.clientWidth, problems = [];
  if (document.documentElement.scrollWidth > width)
    problems.push(`page ${document.documentElement.scrollWidth} px wide`);
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1 && !el.closest('.table-wrap, .bar'))
      problems.push(`${el.tagName}.${el.className} ends at ${Math.round(box.right)} px`);
  }
  const inSentence = el => el.tagName === 'A' && getComputedStyle(el).display === 'inline'
    && el.parentElement.textContent.trim().length > el.textContent.trim().length;
  for (const el of document.querySelectorAll('a[href], button, select, summary, '
      + 'input:not([type=hidden]):not([type=radio]):not([type=checkbox])')) {
    const box = el.getBoundingClientRect();
    if (box.width && box.height < 44 && !inSentence(el))
      problems.push(`${el.outerHTML.slice(0, 80)}: ${Math.round(box.height)} px tall`);
  }
  for (const box of document.querySelectorAll('input[type=checkbox]')) {  // (its label taps)
    const own = box.getBoundingClientRect(), label = box.closest('label');
    const tall = label ? label.getBoundingClientRect().height : 0;
    if (own.width && (own.width < 20 || tall < 44))
      problems.push(`a checkbox ${Math.round(own.width)} px wide, its label `
                    + `${Math.round(tall)} px tall`);
  }
  for (const bar of document.querySelectorAll('.bar'))
    if (bar.getBoundingClientRect().height > 60)
      problems.push(`the menu takes ${Math.round(bar.getBoundingClientRect().height)} px`);
  for (const wrap of document.querySelectorAll('.table-wrap'))
    if (wrap.scrollWidth > wrap.clientWidth && !(wrap.getAttribute('role') === 'region'
        && wrap.getAttribute('aria-label') && wrap.tabIndex === 0))
      problems.push('a table scrolls sideways in an unlabelled box');
  const regions = [...document.querySelectorAll('[role=region], nav, aside')]
    .map(el => `${el.tagName}:${el.getAttribute('role')}:${el.getAttribute('aria-label')}`);
  if (new Set(regions).size < regions.length)  // (axe's landmark-unique)
    problems.push(`landmarks named alike: ${regions}`);
  return problems;
}"""


def test_every_page_fits_a_360_px_phone(app, live_server, browser):
    with app.app_context():
        demo.load_demo(n_prompts=4, images_per_model=2)
        demo.simulate_votes(200, np.random.default_rng(1))
        owner, owner_token = make_owner("acme")
        make_model("Acme-1", owner)
        db.session.commit()
        operator_token = tokens.create_token("ops", role="operator")
        task = db.session.scalars(select(Task).order_by(Task.id)).first()
        image_reports.report(db.session.get(Voter, task.voter_id), task.id, "left", "broken")
        held = db.session.scalar(select(Voter.public_id).order_by(Voter.id))
        suspects.hold([held], reasons={held: "preference: favours Aurora-XL (z 4.2 over 36 "
                                             "votes) with its network's voters; always the "
                                             "left image"})
    context = browser.new_context(viewport={"width": 360, "height": 640}, has_touch=True,
                                  is_mobile=True)
    page, problems = context.new_page(), {}

    def audit(path):
        page.wait_for_load_state("networkidle")
        found = page.evaluate(AUDIT)
        if found:
            problems[path] = found

    for path in ("/", "/leaderboard?criterion=preference", "/campaigns/",
                 "/campaigns/Demo:%20DrawBench", "/hype/", "/no-such-page"):
        page.goto(live_server + path)
        audit(path)
    page.goto(live_server + "/owner/")
    page.get_by_label("Owner token").fill(owner_token)
    page.get_by_role("button", name="Sign in").tap()
    page.get_by_role("heading", name="Your models").wait_for()
    audit("/owner/")
    page.goto(live_server + "/owner/models/Acme-1")
    audit("/owner/models/Acme-1")
    page.goto(live_server + "/admin/")
    page.get_by_label("Operator token").fill(operator_token)
    page.locator("form button[type=submit]").first.tap()
    page.get_by_role("heading", name="Reported images").wait_for()
    for details in page.locator("details").all():  # (what an operator opens too)
        details.evaluate("el => el.open = true")
    audit("/admin/")
    context.close()
    assert not problems, problems
