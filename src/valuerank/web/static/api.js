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

  window.valuerank = { api: api, csrfToken: csrfToken, setCsrf: setCsrf, showFailure: showFailure };
})();
