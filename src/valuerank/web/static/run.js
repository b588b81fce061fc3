// Live progress of one run: Server-Sent Events from /api/runs/{id}/events/stream trigger a
// refresh of the counts from /api/runs/{id} (throttled); plain DOM, no framework, no CDN.
(function () {
  "use strict";
  var root = document.getElementById("run");
  if (!root || !window.EventSource) { return; }
  var runId = root.getAttribute("data-run-id");
  var renderedStatus = root.getAttribute("data-status");
  var api = "/api/runs/" + encodeURIComponent(runId);
  var MAX_EVENTS = 50;
  var timer = null;
  var inFlight = false;

  function text(id, value) {
    var el = document.getElementById(id);
    if (el) { el.textContent = value; }
  }
  function money(v) { return v === null || v === undefined ? "–" : "$" + Number(v).toFixed(4); }
  function duration(v) {
    if (v === null || v === undefined) { return "–"; }
    var s = Math.round(v), m = Math.floor(s / 60), h = Math.floor(m / 60);
    s = s % 60; m = m % 60;
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    return h ? h + "h " + pad(m) + "m" : m + "m " + pad(s) + "s";
  }

  function render(d) {
    var p = d.progress, done = p.completed + p.failed + p.cancelled;
    var bar = document.getElementById("run-progress");
    if (bar) { bar.max = p.total || 1; bar.value = done; }
    text("progress-text", done + "/" + p.total);
    ["queued", "running", "completed", "failed", "cancelled"].forEach(function (k) {
      text("count-" + k, String(p[k]));
    });
    var j = d.judging;
    text("count-judging", (j.completed + j.failed + j.cancelled) + "/" + j.total);
    text("count-transcripts", String(d.transcripts));
    text("count-cost", money(d.cost_usd));
    text("count-eta", duration(d.eta_seconds));
    var status = document.getElementById("run-status");
    if (status) { status.textContent = d.status; status.className = "status status-" + d.status; }
  }

  function refresh() {
    timer = null;
    if (inFlight) { schedule(); return Promise.resolve(null); }
    inFlight = true;
    return fetch(api, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) { if (body && body.success) { render(body.data); } return body; })
      .catch(function () { return null; })
      .then(function (body) { inFlight = false; return body; });
  }
  function schedule() { if (!timer) { timer = setTimeout(refresh, 700); } }

  function logEvent(ev) {
    var list = document.getElementById("events");
    if (!list) { return; }
    var item = document.createElement("li");
    // The run's messages: {type, seq, scenario_id, model, progress, …} (see runs/events.py).
    var what = ev.model ? " " + (ev.scenario_id || "") + " " + ev.model : "";
    var prog = ev.progress ? " (" + ev.progress + ")" : "";
    item.textContent = "#" + ev.seq + " " + ev.type + what + prog;
    list.insertBefore(item, list.firstChild);
    while (list.children.length > MAX_EVENTS) { list.removeChild(list.lastChild); }
  }

  var source = new EventSource(api + "/events/stream");
  source.onopen = function () { var l = document.getElementById("live"); if (l) { l.hidden = false; } };
  source.onmessage = function (e) {
    try { logEvent(JSON.parse(e.data)); } catch (err) { /* ignore a malformed event */ }
    schedule();
  };
  source.addEventListener("status", function () { schedule(); });
  source.addEventListener("end", function (e) {
    source.close();
    var l = document.getElementById("live"); if (l) { l.hidden = true; }
    var end = {};
    try { end = JSON.parse(e.data); } catch (err) { end = {}; }
    refresh().then(function () {
      // The results table, chart and summary are rendered on the server: reload once at the end.
      if (end.status && end.status !== renderedStatus && end.status !== "deleted") { window.location.reload(); }
    });
  });
})();
