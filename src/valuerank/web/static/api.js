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

  // --- live pages (run.js, runs.js): reads that may fail, retried, with a visible mark
  // A read: resolves with the Response when it is 2xx; rejects with {status, code, error,
  // retryAfter} (seconds the server asked to wait, or null) on an HTTP error or no network.
  function read(url, accept) {
    var init = { credentials: "same-origin", headers: { Accept: accept || "application/json" } };
    return fetch(url, init).then(function (response) {
      if (response.ok) { return response; }
      var wait = parseInt(response.headers.get("Retry-After") || "", 10);
      throw {
        status: response.status, code: "HTTP " + response.status,
        error: response.status === 429 ? "too many requests" : response.statusText || "request failed",
        retryAfter: isNaN(wait) ? null : wait
      };
    }, function () {
      throw { status: 0, code: "NETWORK", error: "the server could not be reached", retryAfter: null };
    });
  }
  // A read of the JSON API: resolves with the envelope's data.
  function readData(url) {
    return read(url).then(function (response) { return response.json(); }).then(function (body) {
      if (body && body.success) { return body.data; }
      throw { status: 200, code: "BAD_ANSWER", error: "not an API answer", retryAfter: null };
    });
  }
  // Milliseconds before retrying after `failure`, the `attempt`-th in a row (from 0): what
  // the server's Retry-After says, else 2, 4, 8… s, at most a minute.
  function retryDelay(failure, attempt) {
    if (failure && failure.retryAfter) { return failure.retryAfter * 1000 + 200; }
    return Math.min(60000, 2000 * Math.pow(2, Math.min(attempt, 5)));
  }
  // The "stale, retrying" mark (an element with role="status"): shown with why while
  // `failure` is not null, hidden once the next update succeeded.
  function markStale(el, failure, delayMs) {
    if (!el) { return; }
    if (!failure) { el.hidden = true; el.textContent = ""; return; }
    el.textContent = "This page may be out of date: an update failed (" + failure.code + ": " +
      failure.error + "); retrying in " + Math.max(1, Math.round(delayMs / 1000)) + " s.";
    el.hidden = false;
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

  // An export is a POST (it needs the CSRF token), saved as the file the server names.
  // Resolves with {name, size}; rejects with the envelope's {code, error, hint}.
  function download(url, fallbackName) {
    return fetch(url, {
      method: "POST", credentials: "same-origin", headers: { Accept: "*/*", "X-CSRF-Token": csrfToken() }
    }).then(function (response) {
      if (!response.ok) {
        return response.json().catch(function () { return {}; }).then(function (f) {
          throw { code: f.code || "HTTP_" + response.status, error: f.error || response.statusText, hint: f.hint || null };
        });
      }
      var named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
      return response.blob().then(function (blob) {
        var link = document.createElement("a");
        link.href = URL.createObjectURL(blob);
        link.download = named ? named[1] : fallbackName;
        document.body.appendChild(link);
        link.click();
        link.remove();
        setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
        return { name: link.download, size: blob.size };
      });
    }, function () {
      throw { code: "NETWORK", error: "the server could not be reached", hint: "check that it is running" };
    });
  }

  window.valuerank = {
    api: api, csrfToken: csrfToken, setCsrf: setCsrf, showFailure: showFailure,
    completedPercent: completedPercent, progressBar: progressBar, download: download,
    read: read, readData: readData, retryDelay: retryDelay, markStale: markStale
  };
})();
