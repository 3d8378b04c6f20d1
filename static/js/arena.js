// Arena voter page behaviour. Plain forms work without this file; it adds:
// - Continue stays disabled until an image is chosen, and the response time is measured;
// - alignment captions are revealed one word at a time, and the images stay disabled until
//   the voter confirms having read the caption.
(function () {
  "use strict";

  function initCard(card) {
    if (!card || card.dataset.ready) return;
    card.dataset.ready = "1";
    var submit = card.querySelector("button[type=submit]");
    var pair = card.querySelector("fieldset.pair");
    var timing = card.querySelector("input[name=response_ms]");
    var shownAt = performance.now();

    if (submit && !card.querySelector("input[name=choice]:checked")) submit.disabled = true;
    card.addEventListener("change", function (event) {
      if (event.target.name !== "choice") return;
      if (timing) timing.value = String(Math.round(performance.now() - shownAt));
      if (submit) submit.disabled = false;
    });

    var revealMs = parseInt(card.dataset.revealMs || "", 10);
    if (!revealMs || !pair) return;
    var words = card.querySelectorAll(".caption .word");
    var box = card.querySelector(".caption input[name=read_confirmed]");
    var label = box && box.closest("label");
    pair.disabled = true;
    pair.classList.add("locked");
    if (label) label.hidden = true;
    words.forEach(function (w) { w.classList.add("pending"); });

    var confirm = document.createElement("button");
    confirm.type = "button";
    confirm.className = "button confirm-read";
    confirm.textContent = "I have read the caption";
    confirm.disabled = true;
    card.querySelector(".caption").appendChild(confirm);

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
    }, revealMs);

    confirm.addEventListener("click", function () {
      if (box) box.checked = true;
      pair.disabled = false;
      pair.classList.remove("locked");
      confirm.remove();
      card.classList.add("read");
      shownAt = performance.now();
    });
  }

  function initAll(root) {
    (root || document).querySelectorAll && (root || document)
      .querySelectorAll("form.task").forEach(initCard);
    if (root && root.matches && root.matches("form.task")) initCard(root);
  }

  document.addEventListener("DOMContentLoaded", function () { initAll(document); });
  document.addEventListener("htmx:after:process", function (e) { initAll(e.target); });
  document.addEventListener("htmx:after:swap", function () { initAll(document); });
})();
