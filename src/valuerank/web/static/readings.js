// The reading form of /transcripts/{id}/read (web/pages_readings.py): each value's choice
// becomes the two lists POST /api/transcripts/{id}/readings takes (the CSRF header comes from
// api.js); then the queue's next transcript, or this page again. No CDN.
(function () {
  "use strict";
  var vr = window.valuerank;

  function lists(form) {
    var body = { prioritized_values: [], deprioritized_values: [], note: "" };
    Array.prototype.forEach.call(form.querySelectorAll("fieldset[data-value]"), function (set) {
      var checked = set.querySelector("input:checked");
      var name = set.getAttribute("data-value");
      if (checked && checked.value === "prioritized") { body.prioritized_values.push(name); }
      if (checked && checked.value === "deprioritized") { body.deprioritized_values.push(name); }
    });
    body.note = form.querySelector("textarea[name=note]").value;
    return body;
  }

  function done(form) {
    var next = form.getAttribute("data-next");
    window.location.assign(next || window.location.pathname);
  }

  function failed(form, failure) {
    vr.showFailure(form.querySelector(".form-error"), failure);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("reading-form");
    if (!form) { return; }
    var url = "/api/transcripts/" + encodeURIComponent(form.getAttribute("data-transcript")) + "/readings";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var button = document.getElementById("save-reading");
      button.disabled = true;
      vr.api("POST", url, lists(form)).then(function () { done(form); }, function (failure) {
        failed(form, failure);
        button.disabled = false;
      });
    });
    var remove = document.getElementById("delete-reading");
    if (remove) {
      remove.addEventListener("click", function () {
        vr.api("DELETE", url).then(function () { window.location.assign(window.location.pathname); },
          function (failure) { failed(form, failure); });
      });
    }
  });
})();
