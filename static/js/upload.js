// Owner uploads: send the chosen files one at a time, so the owner sees a progress bar and
// each file's result as it arrives. Without this file the form posts all files at once.
(function () {
  "use strict";
  var form = document.getElementById("upload");
  if (!form || !window.fetch) return;
  var input = form.querySelector("input[type=file]");
  var bar = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var list = document.getElementById("upload-results");
  var token = form.querySelector("input[name=csrf_token]").value;
  var zone = form.querySelector(".drop");

  // Files dropped anywhere on the zone land in the file input.
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function () { zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (e) {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) {
      input.files = e.dataTransfer.files;
      status.textContent = input.files.length + " files ready.";
    }
  });

  function parseManifest(text) {
    var map = {};
    var lines = text.split(/\r?\n/).filter(function (l) { return l.trim(); });
    var head = (lines.shift() || "").split(",").map(function (h) { return h.trim().toLowerCase(); });
    var pi = head.indexOf("prompt_id"), pa = head.indexOf("path");
    if (pi < 0 || pa < 0) throw new Error("manifest.csv: line 1: the header must be prompt_id,path");
    lines.forEach(function (line) {
      var cells = line.split(",");
      map[(cells[pa] || "").trim().split("/").pop()] = (cells[pi] || "").trim();
    });
    return map;
  }

  function readText(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(reader.result); };
      reader.onerror = reject;
      reader.readAsText(file);
    });
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    var files = Array.prototype.slice.call(input.files);
    var manifestFile = files.find(function (f) { return f.name === "manifest.csv"; });
    var images = files.filter(function (f) { return f !== manifestFile; });
    var manifest = {};
    try {
      if (manifestFile) manifest = parseManifest(await readText(manifestFile));
    } catch (err) {
      status.textContent = err.message;
      return;
    }
    form.querySelector("button[type=submit]").disabled = true;
    bar.hidden = false;
    bar.max = images.length;
    bar.value = 0;
    var accepted = 0, refused = 0;
    for (var i = 0; i < images.length; i++) {
      status.textContent = "Uploading " + (i + 1) + " of " + images.length + "…";
      var body = new FormData();
      body.append("csrf_token", token);
      body.append("images", images[i], images[i].name);
      if (manifest[images[i].name]) body.append("prompt_id", manifest[images[i].name]);
      try {
        var response = await fetch(form.action, {method: "POST", body: body,
                                                  headers: {"HX-Request": "true"}});
        var html = await response.text();
        if (!response.ok && response.status !== 422) throw new Error("HTTP " + response.status);
        list.insertAdjacentHTML("beforeend", html);
      } catch (err) {
        var li = document.createElement("li");
        li.className = "result bad";
        li.textContent = "✕ " + images[i].name + ": upload failed (" + err.message + ")";
        list.appendChild(li);
      }
      bar.value = i + 1;
    }
    accepted = list.querySelectorAll(".result.ok").length;
    refused = list.querySelectorAll(".result.bad").length;
    status.textContent = "Done: " + accepted + " accepted, " + refused + " refused.";
    form.querySelector("button[type=submit]").disabled = false;
    input.value = "";
    document.body.dispatchEvent(new Event("uploaded"));  // the stats section reloads itself
  });
})();
