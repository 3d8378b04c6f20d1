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

  // The server checks the manifest alone first, so a bad one stops the batch before any
  // file is sent; its refusal comes back as a result row naming the line.
  async function manifestAccepted(manifestFile) {
    var body = new FormData();
    body.append("csrf_token", token);
    body.append("images", manifestFile, manifestFile.name);
    var response = await fetch(form.action, {method: "POST", body: body,
                                              headers: {"HX-Request": "true"}});
    if (response.ok) return true;
    list.insertAdjacentHTML("beforeend", await response.text());
    status.textContent = "The manifest was refused: nothing was uploaded.";
    return false;
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    var files = Array.prototype.slice.call(input.files);
    var manifestFile = files.find(function (f) { return f.name === "manifest.csv"; });
    var images = files.filter(function (f) { return f !== manifestFile; });
    form.querySelector("button[type=submit]").disabled = true;
    if (manifestFile && !(await manifestAccepted(manifestFile))) {
      form.querySelector("button[type=submit]").disabled = false;
      return;
    }
    bar.hidden = false;
    bar.max = images.length;
    bar.value = 0;
    var accepted = 0, refused = 0;
    for (var i = 0; i < images.length; i++) {
      status.textContent = "Uploading " + (i + 1) + " of " + images.length + "…";
      var body = new FormData();
      body.append("csrf_token", token);
      body.append("images", images[i], images[i].name);
      // The server reads the manifest (one parser for every channel): send it along.
      if (manifestFile) body.append("images", manifestFile, manifestFile.name);
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
