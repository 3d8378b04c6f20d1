// HYPE-time presentation. The display's refresh interval is measured first; every duration
// is a whole number of frames, drawn with requestAnimationFrame; the image's actual on-screen
// time (first frame shown to first mask frame), the frame count and the refresh interval are
// sent with the answer (the server checks they add up), and the trial is voided when the tab
// was hidden or a frame was dropped while the image was up.
(function () {
  "use strict";
  var frameMs = null;

  function nextFrame() { return new Promise(function (r) { requestAnimationFrame(r); }); }

  async function measureFrame() {
    if (frameMs) return frameMs;
    var last = await nextFrame(), deltas = [];
    for (var i = 0; i < 30; i++) {
      var now = await nextFrame();
      deltas.push(now - last);
      last = now;
    }
    deltas.sort(function (a, b) { return a - b; });
    frameMs = deltas[Math.floor(deltas.length / 2)] || 16.7;
    return frameMs;
  }

  async function waitFrames(n) {
    for (var i = 0; i < n; i++) await nextFrame();
  }

  function load(url) {
    var img = new Image();
    img.src = url;
    return img.decode().then(function () { return img; });
  }

  async function run(card) {
    var go = card.querySelector(".go");
    var answers = card.querySelector(".answers");
    var countdown = card.querySelector(".countdown");
    var stimulus = card.querySelector(".stimulus");
    var mask = card.querySelector(".mask");
    var requested = parseFloat(card.dataset.requested);
    var masks = card.dataset.masks.split(" ").filter(Boolean);
    var hidden = false;
    var onHide = function () { if (document.hidden) hidden = true; };
    document.addEventListener("visibilitychange", onHide);
    go.disabled = true;
    var frame = await measureFrame();
    await Promise.all([load(card.dataset.image)].concat(masks.map(load)));
    stimulus.src = card.dataset.image;
    go.hidden = true;
    var oldFeedback = card.querySelector(".feedback");
    if (oldFeedback) oldFeedback.hidden = true;
    var hint = card.querySelector(".stage-hint");
    if (hint) hint.hidden = true;
    countdown.hidden = false;
    for (var n = 3; n >= 1; n--) {  // 3-2-1, 500 ms each
      countdown.textContent = String(n);
      await waitFrames(Math.max(1, Math.round(500 / frame)));
    }
    countdown.hidden = true;
    var frames = Math.max(1, Math.round(requested / frame));
    var dropped = false;
    stimulus.hidden = false;
    var shown = await nextFrame(), last = shown;
    for (var f = 1; f < frames + 1; f++) {
      var t = await nextFrame();
      if (t - last > frame * 1.5) dropped = true;
      last = t;
      if (f === frames) break;
    }
    stimulus.hidden = true;
    mask.hidden = false;
    mask.src = masks[0] || "";
    var actual = last - shown;
    var maskFrames = Math.max(1, Math.round(30 / frame));
    for (var m = 0; m < masks.length; m++) {  // four noise masks of ~30 ms
      mask.src = masks[m];
      await waitFrames(maskFrames);
    }
    mask.hidden = true;
    answers.hidden = false;
    document.removeEventListener("visibilitychange", onHide);
    var buttons = answers.querySelectorAll("button"), sending = false;
    buttons.forEach(function (button) {
      button.addEventListener("click", async function () {
        if (sending) return;
        sending = true;
        buttons.forEach(function (b) { b.disabled = true; });
        var body = new FormData();
        body.append("csrf_token", card.dataset.csrf);
        body.append("trial_id", card.dataset.trial);
        body.append("judged", button.dataset.judged);
        body.append("actual_ms", actual.toFixed(1));
        body.append("frames", String(frames));
        body.append("frame_ms", frame.toFixed(3));
        body.append("voided", hidden || dropped ? "1" : "0");
        var response = null;
        try {
          response = await fetch(card.dataset.answerUrl, {method: "POST", body: body,
                                                          headers: {"HX-Request": "true"}});
        } catch (error) {
          response = null;  // offline: the answer is kept on the page, to be sent again
        }
        if (!response || response.status >= 500) {
          unavailable(card);
          sending = false;
          buttons.forEach(function (b) { b.disabled = false; });
          return;
        }
        card.outerHTML = await response.text();  // the next image, or a refusal as a card
        init();
      });
    });
  }

  // The answer did not reach Arena: say so, and let the same answer be sent again (a reload
  // would void the trial, its image having been shown).
  function unavailable(card) {
    var note = card.querySelector(".alert.unavailable");
    if (!note) {
      note = document.createElement("p");
      note.className = "alert unavailable";
      note.setAttribute("role", "alert");
      card.querySelector(".answers").before(note);
    }
    note.textContent = document.body.dataset.unavailable;
  }

  function init() {
    var card = document.querySelector(".hype-timed");
    if (!card || card.dataset.ready) return;
    card.dataset.ready = "1";
    card.querySelector(".go").addEventListener("click", function () { run(card); });
  }

  document.addEventListener("DOMContentLoaded", init);
  if (document.readyState !== "loading") init();
})();
