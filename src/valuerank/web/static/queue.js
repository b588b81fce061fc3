// The queue page, live: every few seconds it fetches itself and swaps the parts
// (`[data-live]`) whose server rendering changed, keeping the keyboard focus and the open
// error lists. Buttons marked `data-action="METHOD /api/…"` call the JSON API through
// research.js's `valuerank.api` (session cookie + CSRF token), announce what they did, and
// refresh at once; a refusal is shown in their section with its code and hint.
(function () {
  "use strict";

  var note = document.getElementById("queue-live-note");
  if (!note) { return; }
  var every = (parseInt(note.getAttribute("data-refresh"), 10) || 3) * 1000;
  var offline = document.getElementById("queue-offline");
  var announcer = document.getElementById("queue-announce");
  var updated = document.getElementById("queue-updated");
  var last = {};  // the server's rendering of each part, as last swapped in
  var busy = false;
  var stopped = false;

  Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), function (part) {
    last[part.getAttribute("data-live")] = part.innerHTML;
  });

  var showError = window.valuerank.showFailure;

  function announce(text) {
    if (!announcer || !text) { return; }
    announcer.textContent = "";
    // A fresh text node, so screen readers read it even when the text repeats.
    window.setTimeout(function () { announcer.textContent = text; }, 50);
  }

  function swap(part, html) {
    var active = document.activeElement;
    var hadFocus = active && part.contains(active);
    var focusId = hadFocus ? active.id : "";
    var open = Array.prototype.map.call(part.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    part.innerHTML = html;
    open.forEach(function (id) {
      var details = document.getElementById(id);
      if (details) { details.open = true; }
    });
    if (!hadFocus) { return; }
    var again = focusId && document.getElementById(focusId);
    if (again && part.contains(again)) { again.focus(); return; }
    // The control is gone (a retried job left the list): the section's heading takes focus.
    var section = part.closest("section");
    var heading = section && section.querySelector("h2");
    if (heading) { heading.focus(); }
  }

  function stamp() {
    if (updated) { updated.textContent = " · updated " + new Date().toLocaleTimeString(); }
  }

  function stop(message) {
    stopped = true;
    if (offline) {
      offline.textContent = message;
      offline.hidden = false;
    }
  }

  function refresh(force) {
    if (stopped || (busy && !force) || (!force && document.hidden)) { return Promise.resolve(); }
    busy = true;
    var url = window.location.pathname + window.location.search;
    return fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      if (response.status === 401) {
        stop("You are signed out: live updates stopped. Reload the page to sign in again.");
        return;
      }
      if (!response.ok) { throw new Error("HTTP " + response.status); }
      return response.text().then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html");
        Array.prototype.forEach.call(fresh.querySelectorAll("[data-live]"), function (part) {
          var name = part.getAttribute("data-live");
          var here = document.querySelector('[data-live="' + name + '"]');
          if (here && last[name] !== part.innerHTML) {
            last[name] = part.innerHTML;
            swap(here, part.innerHTML);
          }
        });
        if (offline && !stopped) { offline.hidden = true; }
        stamp();
      });
    }).catch(function (error) {
      if (offline) {
        offline.textContent = "Live updates failed (" + error.message + "); retrying.";
        offline.hidden = false;
      }
    }).then(function () { busy = false; });
  }

  function act(event) {
    var button = event.target.closest ? event.target.closest("button[data-action]") : null;
    // Busy buttons are marked, not disabled: a disabled button would drop the keyboard focus.
    if (!button || button.getAttribute("aria-disabled") === "true") { return; }
    var question = button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { return; }
    var spec = button.getAttribute("data-action");
    var space = spec.indexOf(" ");
    var scope = button.closest("[data-scope]") || document;
    var box = scope.querySelector("[data-error]");
    if (box) { box.hidden = true; }
    var done = button.getAttribute("data-done");
    button.setAttribute("aria-disabled", "true");
    window.valuerank.api(spec.slice(0, space), spec.slice(space + 1)).then(function () {
      announce(done);
      return refresh(true);
    }, function (failure) {
      showError(box, failure);
    }).then(function () { button.removeAttribute("aria-disabled"); });
  }

  document.addEventListener("click", act);
  window.setInterval(function () { refresh(false); }, every);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) { refresh(false); }
  });
  stamp();
})();
