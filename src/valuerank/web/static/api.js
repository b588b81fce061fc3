// The one JSON API client of the pages, loaded first on every page (base.html): calls carry the
// session cookie and, on unsafe methods, the CSRF token; failures come back as
// {status, code, error, hint, details, retryAfter} and are shown by `showFailure`. No CDN.
(function () {
  "use strict";

  var known = "";  // the CSRF token GET /api/auth/me answered (auth.js), if any

  function csrfToken() {
    if (known) { return known; }
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta && meta.content) { return meta.content; }
    var match = document.cookie.match(/(?:^|;\s*)valuerank_csrf[^=]*=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function setCsrf(token) { if (token) { known = token; } }

  // One API call: resolves with the envelope's `data`, rejects with the failure.
  function api(method, url, body) {
    var headers = { Accept: "application/json" };
    var init = { method: method, credentials: "same-origin", headers: headers };
    if (method !== "GET") { headers["X-CSRF-Token"] = csrfToken(); }
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(url, init).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (envelope) {
        if (envelope && envelope.success) { return envelope.data; }
        var failure = envelope || {};
        throw {
          status: response.status,
          code: failure.code || "HTTP_" + response.status,
          error: failure.error || response.statusText || "request failed",
          hint: failure.hint || null,
          details: failure.details || null,
          retryAfter: response.headers.get("Retry-After")
        };
      });
    }, function () {
      throw { status: 0, code: "NETWORK", error: "the server could not be reached", hint: "check that it is running" };
    });
  }

  // A failure in `box`: "CODE: error", up to five field details, and the hint; `lead`
  // replaces the "CODE: " heading.
  function showFailure(box, failure, lead) {
    if (!box) { return; }
    box.textContent = "";
    var head = document.createElement("strong");
    head.textContent = lead || (failure.code || "ERROR") + ": ";
    box.appendChild(head);
    box.appendChild(document.createTextNode(failure.error || "request failed"));
    (failure.details || []).slice(0, 5).forEach(function (d) {
      var item = document.createElement("span");
      item.className = "detail";
      var where = Array.isArray(d.loc) ? d.loc.join(".") : d.loc;
      item.textContent = (where ? where + ": " : "") + (d.msg || JSON.stringify(d));
      box.appendChild(item);
    });
    if (failure.hint) {
      var hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = "Hint: " + failure.hint;
      box.appendChild(hint);
    }
    box.hidden = false;
  }

  // Progress of jobs {total, completed, failed, cancelled, …} as the server draws it
  // (web/progress_bar.py, templates/_progress.html): percent of completed work only, rounded
  // down; one SVG segment per outcome, in jobs.
  var OUTCOMES = ["completed", "failed", "cancelled"];
  function completedPercent(p) { return p.total ? Math.floor(100 * p.completed / p.total) : 0; }
  function progressText(p) {
    return completedPercent(p) + " % completed: " + p.completed + " of " + p.total + " jobs; " +
      p.failed + " failed, " + p.cancelled + " cancelled";
  }
  function progressBar(svg, p) {
    if (!svg) { return; }
    var width = String(p.total || 1);
    svg.setAttribute("viewBox", "0 0 " + width + " 1");
    svg.setAttribute("aria-valuemax", String(p.total));
    svg.setAttribute("aria-valuenow", String(p.completed));
    svg.setAttribute("aria-valuetext", progressText(p));
    var track = svg.querySelector(".seg-track");
    if (track) { track.setAttribute("width", width); }
    var x = 0;
    OUTCOMES.forEach(function (outcome) {
      var seg = svg.querySelector('[data-seg="' + outcome + '"]');
      if (seg) { seg.setAttribute("x", String(x)); seg.setAttribute("width", String(p[outcome])); }
      x += p[outcome];
    });
  }

  window.valuerank = {
    api: api, csrfToken: csrfToken, setCsrf: setCsrf, showFailure: showFailure,
    completedPercent: completedPercent, progressBar: progressBar
  };
})();
