// One run, live: Server-Sent Events from /api/runs/{id}/events/stream fill the event log and
// trigger (throttled) refreshes of the counts, the status, the valid buttons (/api/runs/{id})
// and the progress per model and provider (/api/runs/{id}/breakdown); the results, failures
// and summary are re-rendered by the server (/runs/{id}/sections) when they change. The
// buttons call the JSON API through research.js (session cookie + CSRF token). The page
// never reloads itself. Plain DOM, no framework, no CDN.
(function () {
  "use strict";
  var root = document.getElementById("run");
  if (!root) { return; }
  var runId = root.getAttribute("data-run-id");
  var api = "/api/runs/" + encodeURIComponent(runId);
  var MAX_EVENTS = 200;
  var lastSeq = parseInt(root.getAttribute("data-events-after") || "0", 10) || 0;
  var source = null;
  var timer = null;
  var inFlight = false;
  var sectionsTimer = null;
  // What the server-rendered sections were drawn from: redrawn when one of these changes.
  var drawn = { transcripts: null, failed: null, status: root.getAttribute("data-status") };

  function byId(id) { return document.getElementById(id); }
  function text(id, value) { var el = byId(id); if (el) { el.textContent = value; } }
  function money(v) { return v === null || v === undefined ? "–" : "$" + Number(v).toFixed(4); }
  function duration(v) {
    if (v === null || v === undefined) { return "–"; }
    var s = Math.round(v), m = Math.floor(s / 60), h = Math.floor(m / 60);
    s = s % 60; m = m % 60;
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    return h ? h + "h " + pad(m) + "m" : m + "m " + pad(s) + "s";
  }
  // "2025-03-02 14:05:00 UTC" from an ISO time, as the server writes times (templating.py).
  function when(iso) {
    if (!iso) { return "–"; }
    var t = new Date(iso);
    return isNaN(t) ? "–" : t.toISOString().slice(0, 19).replace("T", " ") + " UTC";
  }
  function terminal(status) { return status === "completed" || status === "failed" || status === "cancelled"; }
  function done(p) { return p.completed + p.failed + p.cancelled; }

  var setBar = window.valuerank.progressBar;

  function renderActions(actions) {
    var valid = {};
    (actions || []).forEach(function (a) { valid[a] = true; });
    root.setAttribute("data-actions", (actions || []).slice().sort().join(" "));
    Array.prototype.forEach.call(root.querySelectorAll("[data-action]"), function (el) {
      if (el.getAttribute("data-busy") === "true") { return; }
      el.disabled = !valid[el.getAttribute("data-action")];
    });
  }

  function render(d) {
    var p = d.progress;
    setBar(byId("run-progress"), p);
    text("progress-text", p.completed + "/" + p.total);
    text("progress-percent", window.valuerank.completedPercent(p) + " %");
    ["queued", "running", "completed", "failed", "cancelled"].forEach(function (k) {
      text("count-" + k, String(p[k]));
    });
    text("count-judging", done(d.judging) + "/" + d.judging.total);
    text("count-transcripts", String(d.transcripts));
    text("count-cost", money(d.cost_usd));
    text("count-eta", duration(d.eta_seconds));
    var status = byId("run-status");
    if (status) { status.textContent = d.status; status.className = "status status-" + d.status; }
    root.setAttribute("data-status", d.status);
    text("run-started", when(d.started_at));
    text("run-finished", when(d.finished_at));
    var error = byId("run-error");
    if (error) { error.textContent = d.error || ""; error.hidden = !d.error; }
    renderActions(d.actions);
    var failed = p.failed + d.judging.failed;
    if (drawn.transcripts === null) { drawn.transcripts = d.transcripts; drawn.failed = failed; }
    if (d.transcripts !== drawn.transcripts || failed !== drawn.failed || d.status !== drawn.status) {
      scheduleSections(terminal(d.status) ? 0 : 1500);
      drawn.transcripts = d.transcripts; drawn.failed = failed; drawn.status = d.status;
    }
  }

  function renderGroups(name, groups) {
    var table = byId("per-" + name);
    if (!table) { return; }
    var rows = {};
    Array.prototype.forEach.call(table.querySelectorAll("tbody tr"), function (row) {
      rows[row.getAttribute("data-key")] = row;
    });
    groups.forEach(function (g) {
      var row = rows[g[name]];
      if (!row) { return; }
      setBar(row.querySelector('[data-f="bar"]'), g);
      row.querySelector('[data-f="done"]').textContent = g.completed + "/" + g.total;
      ["running", "queued", "failed"].forEach(function (k) {
        row.querySelector('[data-f="' + k + '"]').textContent = String(g[k]);
      });
    });
  }

  function getJson(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) { return body && body.success ? body.data : null; });
  }

  function refresh() {
    timer = null;
    if (inFlight) { schedule(); return Promise.resolve(null); }
    inFlight = true;
    return Promise.all([getJson(api), getJson(api + "/breakdown")])
      .then(function (got) {
        if (got[0]) { render(got[0]); }
        if (got[1]) { renderGroups("model", got[1].models); renderGroups("provider", got[1].providers); }
        return got[0];
      })
      .catch(function () { return null; })
      .then(function (d) { inFlight = false; return d; });
  }
  function schedule() { if (!timer) { timer = setTimeout(refresh, 700); } }

  function refreshSections() {
    sectionsTimer = null;
    return fetch("/runs/" + encodeURIComponent(runId) + "/sections", {
      credentials: "same-origin", headers: { Accept: "text/html" }
    }).then(function (r) { return r.ok ? r.text() : null; }).then(function (html) {
      var box = byId("run-sections");
      // Rendered by our own template with every text escaped (run_sections.html).
      if (html !== null && box) { box.innerHTML = html; }
    }).catch(function () { /* the next change retries */ });
  }
  function scheduleSections(delay) {
    if (sectionsTimer && delay > 0) { return; }
    if (sectionsTimer) { clearTimeout(sectionsTimer); }
    sectionsTimer = setTimeout(refreshSections, delay);
  }

  // --- the live event log
  function describe(ev) {
    var parts = ["#" + ev.seq, ev.type.replace(/_/g, " ")];
    if (ev.model) { parts.push(ev.model); }
    if (ev.scenario_id) { parts.push(ev.scenario_id); }
    if (ev.decision_code !== undefined && ev.decision_code !== null) { parts.push("decision " + ev.decision_code); }
    if (ev.status) { parts.push(ev.status); }
    if (ev.progress) { parts.push("(" + ev.progress + ")"); }
    return parts.join(" · ");
  }
  function logEvent(ev) {
    var list = byId("events");
    if (!list) { return; }
    var empty = byId("no-events");
    if (empty) { empty.remove(); }
    var item = document.createElement("li");
    item.className = "event event-" + ev.type;
    var time = document.createElement("time");
    if (ev.timestamp) {
      time.dateTime = ev.timestamp;
      time.textContent = ev.timestamp.slice(11, 19);
    }
    item.appendChild(time);
    item.appendChild(document.createTextNode(" " + describe(ev)));
    if (ev.error) {
      var error = document.createElement("span");
      error.className = "error-text";
      error.textContent = " — " + ev.error;
      item.appendChild(error);
    }
    list.insertBefore(item, list.firstChild);
    while (list.children.length > MAX_EVENTS) { list.removeChild(list.lastChild); }
  }

  function live(on) { var l = byId("live"); if (l) { l.hidden = !on; } }

  function connect() {
    if (!window.EventSource || source) { return; }
    source = new EventSource(api + "/events/stream?after=" + lastSeq);
    source.onopen = function () { live(true); };
    source.onmessage = function (e) {
      try {
        var ev = JSON.parse(e.data);
        if (ev.seq > lastSeq) { lastSeq = ev.seq; logEvent(ev); }
      } catch (err) { /* ignore a malformed event */ }
      schedule();
    };
    source.onerror = function () { live(false); };  // the browser reconnects by itself
    source.addEventListener("status", function () { schedule(); });
    source.addEventListener("end", function () {
      source.close();
      source = null;
      live(false);
      refresh();
      scheduleSections(0);
    });
  }

  // --- the controls
  function scope() { return root.querySelector(".run-controls"); }
  function showError(failure) {
    window.valuerank.showFailure(scope().querySelector("[data-error]"), failure);
  }
  function clearError() {
    var box = scope().querySelector("[data-error]");
    box.hidden = true;
    box.textContent = "";
  }

  function perform(control, spec, body, label) {
    var space = spec.indexOf(" ");
    var method = spec.slice(0, space), url = spec.slice(space + 1);
    clearError();
    control.disabled = true;
    control.setAttribute("data-busy", "true");
    return window.valuerank.api(method, url, body).then(function (data) {
      control.removeAttribute("data-busy");
      var after = control.getAttribute("data-after");
      if (after) { window.location.assign(after); return; }
      text("action-status", label + ": done" + (data && data.status ? ", the run is " + data.status : "") + ".");
      if (data && data.status) {
        var status = byId("run-status");
        if (status) { status.textContent = data.status; status.className = "status status-" + data.status; }
      }
      return refresh().then(function () { connect(); });
    }, function (failure) {
      control.removeAttribute("data-busy");
      showError(failure);
      return refresh();
    });
  }

  root.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-call]");
    if (!button || button.disabled) { return; }
    var question = button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { return; }
    perform(button, button.getAttribute("data-call"), undefined, button.textContent.trim());
  });

  var expand = byId("expand-form");
  if (expand) {
    expand.addEventListener("submit", function (event) {
      event.preventDefault();
      var input = expand.elements.sample_percentage;
      var body = { sample_percentage: Number(input.value) };
      // The sections say what the results are based on: redrawn with the new sample.
      perform(expand.querySelector("fieldset"), expand.getAttribute("data-call"), body, "Expand")
        .then(function () { scheduleSections(0); });
    });
  }

  // Export: a POST (it needs the CSRF token), saved as the file the server names.
  var exporter = byId("export-run");
  if (exporter) {
    exporter.addEventListener("click", function () {
      clearError();
      exporter.disabled = true;
      fetch(exporter.getAttribute("data-export"), {
        method: "POST", credentials: "same-origin",
        headers: { "X-CSRF-Token": window.valuerank.csrfToken(), Accept: "application/zip" }
      }).then(function (response) {
        if (!response.ok) {
          return response.json().catch(function () { return {}; }).then(function (f) {
            throw { code: f.code || "HTTP_" + response.status, error: f.error || response.statusText, hint: f.hint };
          });
        }
        var disposition = response.headers.get("Content-Disposition") || "";
        var match = /filename="([^"]+)"/.exec(disposition);
        return response.blob().then(function (blob) {
          var link = document.createElement("a");
          link.href = URL.createObjectURL(blob);
          link.download = match ? match[1] : "run-" + runId + ".zip";
          document.body.appendChild(link);
          link.click();
          link.remove();
          setTimeout(function () { URL.revokeObjectURL(link.href); }, 10000);
          text("action-status", "Export: " + link.download + " downloaded.");
        });
      }).catch(function (failure) {
        showError(failure.code ? failure : { code: "NETWORK", error: "the export failed", hint: null });
      }).then(function () { exporter.disabled = false; });
    });
  }

  connect();
  refresh();
  // A safety net where events do not get through (a buffering proxy): a slow poll while
  // the run can still change.
  setInterval(function () {
    if (!document.hidden && !terminal(root.getAttribute("data-status"))) { schedule(); }
  }, 5000);
})();
