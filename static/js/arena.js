// Arena voter page behaviour. Plain forms work without this file; it adds:
// - Continue stays disabled until an image is chosen, and the response time is measured;
// - captions are revealed one word at a time before the voter may confirm having
//   read them (the server keeps the images disabled until it accepts that confirmation);
// - each image is named as it is placed: top and bottom when stacked, left and right side
//   by side;
// - the thank-you card starts the next session after a short countdown, unless stopped;
// - an image's enlarge button opens a full-screen view (pinch to zoom, swipe or "Other
//   image" for the other one, Close or Escape to go back);
// - the leaderboard's criterion tabs carry the filters chosen on the page;
// - a card whose request got no answer (server error, no network) says so;
// - a newcomer refused for a busy network can answer a proof of work instead of waiting.
(function () {
  "use strict";

  function initCard(card) {
    if (!card || card.dataset.ready) return;
    card.dataset.ready = "1";
    var submit = card.querySelector("button[name=continue]");
    var timing = card.querySelector("input[name=response_ms]");
    var shownAt = performance.now();

    if (submit && !card.querySelector("input[name=choice]:checked")) submit.disabled = true;
    card.addEventListener("change", function (event) {
      if (event.target.name !== "choice") return;
      if (timing) timing.value = String(Math.round(performance.now() - shownAt));
      if (submit) submit.disabled = false;
    });

    // Alignment: reveal the caption one word at a time; the server-rendered "I have read
    // the caption" button (which htmx posts) stays disabled until the last word is shown.
    // The server enforces the same timing, so this only paces the voter.
    var wordMs = parseInt(card.dataset.wordMs || "", 10);
    var confirm = card.querySelector(".confirm-read");
    if (!wordMs || !confirm) return;
    var words = card.querySelectorAll(".caption .word");
    words.forEach(function (w) { w.classList.add("pending"); });
    confirm.disabled = true;
    var i = 0;
    var timer = setInterval(function () {
      if (i < words.length) {
        words[i].classList.remove("pending");
        i += 1;
      }
      if (i >= words.length) {
        clearInterval(timer);
        confirm.disabled = false;
      }
    }, wordMs);
  }

  // The server names the images for a phone held upright (stacked); side by side they are
  // renamed from the card's words (already mirrored for a right-to-left page).
  function nameSides(card) {
    var choices = card.querySelectorAll(".voting label.choice[data-tall]");
    if (choices.length !== 2) return;
    var first = choices[0].getBoundingClientRect(), second = choices[1].getBoundingClientRect();
    var stacked = second.top >= first.bottom - 1;
    choices.forEach(function (choice) {
      var name = stacked ? choice.dataset.tall : choice.dataset.wide;
      var zoom = choice.querySelector("a.zoom");
      choice.querySelector("img").alt = name;
      if (zoom) {
        zoom.dataset.label = name;
        zoom.setAttribute("aria-label",
          stacked ? choice.dataset.enlargeTall : choice.dataset.enlargeWide);
      }
    });
  }
  var renaming = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(renaming);
    renaming = requestAnimationFrame(function () {
      document.querySelectorAll("form.task").forEach(nameSides);
    });
  });

  // The thank-you card: the next session starts by itself after data-next-in seconds
  // (counted only while the page is in sight), unless the voter taps Stop.
  function initDone(card) {
    if (!card || card.dataset.ready || !card.dataset.nextIn) return;
    card.dataset.ready = "1";
    var left = parseInt(card.dataset.nextIn, 10);
    var note = card.querySelector(".next-in");
    var form = card.querySelector("form.next-session");
    if (!note || !form || !(left > 0)) return;
    var text = note.querySelector(".next-in-text");
    var template = text.dataset.template;
    var show = function () { text.textContent = template.replace("{seconds}", String(left)); };
    show();
    note.hidden = false;
    var timer = setInterval(function () {
      if (document.hidden) return;
      left -= 1;
      if (left > 0) return show();
      clearInterval(timer);
      note.hidden = true;
      form.requestSubmit();
    }, 1000);
    note.querySelector("button").addEventListener("click", function () {
      clearInterval(timer);
      note.hidden = true;
    });
  }

  function initAll(root) {
    (root || document).querySelectorAll && (root || document)
      .querySelectorAll("form.task").forEach(initCard);
    if (root && root.matches && root.matches("form.task")) initCard(root);
    document.querySelectorAll("form.task").forEach(nameSides);
    initDone(document.querySelector("section.done"));
  }

  // The full-screen view: one dialog for the page, showing the largest variant of either
  // image of the card whose enlarge button was pressed (without this script that button is
  // a link to the same file). A one-finger swipe at normal scale shows the other image; once
  // pinched in, a swipe pans instead.
  var viewer = null;
  var viewed = { links: [], index: 0 };

  function showViewed() {
    var link = viewed.links[viewed.index];
    var img = viewer.querySelector("img");
    var shown = link.closest("label.choice").querySelector("img");
    // the card's picture at once, the larger one once it has come (made when first asked for)
    img.src = shown.currentSrc || shown.src;
    var large = new Image();
    large.onload = function () {
      if (viewed.links[viewed.index] === link) img.src = link.href;
    };
    large.src = link.href;
    img.alt = link.dataset.label;
    viewer.querySelector(".viewer-label").textContent = link.dataset.label;
  }

  function otherImage() {
    viewed.index = 1 - viewed.index;
    showViewed();
  }

  // (its words come from the card, in the page's language)
  function buildViewer(card) {
    viewer = document.createElement("dialog");
    viewer.className = "viewer";
    viewer.innerHTML = '<img alt="">' +
      '<div class="viewer-bar"><p class="viewer-label"></p>' +
      '<button type="button" class="button" data-act="other"></button>' +
      '<button type="button" class="button primary" data-act="close"></button></div>';
    viewer.setAttribute("aria-label", card.dataset.viewer);
    viewer.querySelector("[data-act=other]").textContent = card.dataset.other;
    viewer.querySelector("[data-act=close]").textContent = card.dataset.close;
    viewer.addEventListener("click", function (event) {
      var act = event.target.closest && event.target.closest("[data-act]");
      if (!act) return;
      if (act.dataset.act === "other") otherImage();
      else viewer.close();
    });
    viewer.addEventListener("keydown", function (event) {
      if (event.key === "ArrowLeft" || event.key === "ArrowRight") otherImage();
    });
    var start = null;
    viewer.addEventListener("touchstart", function (event) {
      start = event.touches.length === 1
        ? { x: event.touches[0].clientX, y: event.touches[0].clientY } : null;
    }, { passive: true });
    viewer.addEventListener("touchend", function (event) {
      if (!start || event.changedTouches.length !== 1) return;
      var dx = event.changedTouches[0].clientX - start.x;
      var dy = event.changedTouches[0].clientY - start.y;
      var zoomed = window.visualViewport && window.visualViewport.scale > 1.01;
      start = null;
      if (!zoomed && Math.abs(dx) > 60 && Math.abs(dx) > 2 * Math.abs(dy)) otherImage();
    }, { passive: true });
    document.body.appendChild(viewer);
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.zoom");
    if (!link) return;
    var card = link.closest("form.task");
    if (!card || typeof HTMLDialogElement === "undefined") return;  // the plain link
    event.preventDefault();
    if (!viewer) buildViewer(card);
    viewed.links = Array.from(card.querySelectorAll("a.zoom"));
    viewed.index = Math.max(0, viewed.links.indexOf(link));
    showViewed();
    viewer.showModal();
  });

  // Leaderboard: the criterion tabs keep the filters chosen since the page loaded (htmx
  // swaps the board and the URL, not the tabs, which the server rendered with the filters
  // of the page load).
  document.addEventListener("click", function (event) {
    var tab = event.target.closest && event.target.closest(".tabs a");
    var form = document.querySelector("form.filters");
    if (!tab || !form) return;
    var params = new URLSearchParams(new FormData(form));
    params.set("criterion", new URL(tab.href).searchParams.get("criterion") || "");
    Array.from(params.keys()).forEach(function (key) {
      if (params.get(key) === "") params.delete(key);
    });
    tab.href = form.getAttribute("action") + "?" + params.toString();
  });

  // Forms whose answer takes a moment (drawing a HYPE task): the button says so and cannot
  // be pressed twice.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("busy-on-submit")) return;
    form.querySelectorAll("button[type=submit]").forEach(function (button) {
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      button.textContent = "Preparing your images…";
    });
  });

  // A newcomer from a busy network proves work instead of waiting (arena/web/proof.py): the
  // server's ALTCHA challenge (PoW v2, iterated SHA-256) is answered here, then the request
  // that was refused is sent again with the answer. WebCrypto needs https (or localhost).
  function hex(bytes) {
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }
  function bytes(text) {
    return Uint8Array.from(text.match(/../g) || [], function (b) { return parseInt(b, 16); });
  }
  async function solve(challenge) {
    var p = challenge.parameters, nonce = bytes(p.nonce), salt = bytes(p.salt);
    var data = new Uint8Array(salt.length + nonce.length + 4);
    data.set(salt);
    data.set(nonce, salt.length);
    var view = new DataView(data.buffer);
    for (var counter = 0; counter < 4294967296; counter++) {
      view.setUint32(salt.length + nonce.length, counter);
      var key = data;
      for (var i = 0; i < Math.max(1, p.cost); i++) {
        key = new Uint8Array(await crypto.subtle.digest("SHA-256", key));
      }
      var derived = hex(key.slice(0, p.keyLength));
      if (derived.startsWith(p.keyPrefix)) {
        return {challenge: challenge, solution: {counter: counter, derivedKey: derived}};
      }
    }
    return null;
  }
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.dataset || !form.dataset.proof || form.elements.arena_proof.value) return;
    event.preventDefault();
    var status = form.querySelector("[data-proof-status]");
    var button = form.querySelector("button[type=submit]");
    if (!window.crypto || !crypto.subtle) {
      status.textContent = form.dataset.insecure;
      return;
    }
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    status.textContent = form.dataset.working;
    solve(JSON.parse(form.dataset.proof)).then(function (payload) {
      form.elements.arena_proof.value = btoa(JSON.stringify(payload));
      form.submit();
    });
  });

  // A request htmx sent that got no answer to swap in (a 5xx, which the page's htmx config
  // leaves unswapped, or no network at all): the card stays as it was, the voter's choice
  // with it, so they can try again, and it says why nothing happened.
  function unavailable(event) {
    var message = document.body.dataset.unavailable;
    var card = event.target && event.target.closest ? event.target.closest("#card") : null;
    if (!message || !card) return;
    var note = card.querySelector(".alert.unavailable");
    if (!note) {
      note = document.createElement("p");
      note.className = "alert unavailable";
      note.setAttribute("role", "alert");
      (card.querySelector(".task-text") || card).prepend(note);
    }
    note.textContent = message;
  }
  document.addEventListener("htmx:response:error", function (event) {
    var response = event.detail && event.detail.ctx && event.detail.ctx.response;
    if (response && response.status >= 500) unavailable(event);
  });
  document.addEventListener("htmx:error", unavailable);

  document.addEventListener("DOMContentLoaded", function () { initAll(document); });
  document.addEventListener("htmx:after:process", function (e) { initAll(e.target); });
  document.addEventListener("htmx:after:swap", function () { initAll(document); });
})();
