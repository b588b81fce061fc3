// One run, live, from one feed: the run's Server-Sent Events (/api/runs/{id}/events/stream
// ?snapshots=true) fill the event log and carry snapshots of the run (counts, status, valid
// buttons, progress per model and provider), debounced by the server, one last before the
// stream's `end`. The results, failures and summary are drawn by the server
// (/runs/{id}/sections): fetched when a snapshot's sections key differs from the one drawn (at
// most every few seconds while the run moves) and once more at the end; an answer older than
// one already drawn is dropped. Only while the stream is down does a slow poll of the JSON
// API stand in. A failed update shows the "stale, retrying" mark (#run-stale) until the next
// success and is retried when the server's Retry-After says. The buttons call the JSON API
// through api.js (session cookie + CSRF token). The page never reloads itself. Plain DOM, no
// framework, no CDN.
(function () {
  "use strict";
  var root = document.getElementById("run");
  if (!root) { return; }
  var vr = window.valuerank;
  var runId = root.getAttribute("data-run-id");
  var api = "/api/runs/" + encodeURIComponent(runId);
  var MAX_EVENTS = 200;
  var SECTIONS_MS = 5000;  // the sections are redrawn at most this often while the run moves
  var POLL_MS = 10000;  // the safety poll, only while the stream is down
  var lastSeq = parseInt(root.getAttribute("data-events-after") || "0", 10) || 0;
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

  var setBar = vr.progressBar;

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
    text("progress-percent", vr.completedPercent(p) + " %");
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
  // --- what failed: the stale mark shows while any of it has
  var failing = {};  // "run" | "sections" -> {failure, delay}
  function failed(what, failure, delay) {
    failing[what] = { failure: failure.code ? failure : { code: "ERROR", error: String(failure) }, delay: delay };
    showStale();
  }
  function succeeded(what) { if (failing[what]) { delete failing[what]; showStale(); } }
  function showStale() {
    var first = failing.run || failing.sections || null;
    vr.markStale(byId("run-stale"), first && first.failure, first ? first.delay : 0);
  }

  // --- the sections (results, chart, failures, summary), drawn by the server
  var sectionsBox = byId("run-sections");
  var sec = {
    drawn: sectionsBox ? sectionsBox.getAttribute("data-sections-key") : null,
    want: null, wantedAt: 0,  // the key last asked for (null: unknown), and when (in requests)
    need: false, issued: 0, applied: 0, pending: 0,  // requests sent, the newest drawn, unanswered
    timer: null, at: 0, lastStart: -Infinity, notBefore: 0, attempt: 0
  };
  // data-sections on the page: "current" once nothing is due, asked or scheduled.
  function sectionsState() {
    root.setAttribute("data-sections", sec.need || sec.timer || sec.pending ? "updating" : "current");
  }
  // `key`: the sections a snapshot says are current (null: they may have changed); `urgent`:
  // now (as soon as Retry-After allows) rather than at most every SECTIONS_MS.
  function wantSections(key, urgent) {
    sec.want = key;
    if (key !== null && key === sec.drawn && !urgent) { sec.need = false; sectionsState(); return; }
    sec.need = true;
    sec.wantedAt = sec.issued;
    scheduleSections(urgent);
  }
  function scheduleSections(urgent) {
    if (!sec.need || !sectionsBox) { return; }
    var now = Date.now();
    var at = Math.max(sec.notBefore, urgent ? now : sec.lastStart + SECTIONS_MS);
    if (sec.timer) {
      if (at >= sec.at) { return; }
      clearTimeout(sec.timer);
    }
    sec.at = at;
    sec.timer = setTimeout(fetchSections, Math.max(0, at - now));
    sectionsState();
  }
  function fetchSections() {
    sec.timer = null;
    var seq = ++sec.issued;
    sec.lastStart = Date.now();
    sec.pending += 1;
    vr.read("/runs/" + encodeURIComponent(runId) + "/sections", "text/html").then(function (response) {
      return response.text().then(function (html) {
        sec.attempt = 0;
        succeeded("sections");
        if (seq <= sec.applied) { return; }  // the answer to a later request is drawn already
        sec.applied = seq;
        // Rendered by our own template with every text escaped (run_sections.html).
        sectionsBox.innerHTML = html;
        sec.drawn = response.headers.get("X-Sections-Key");
        sectionsBox.setAttribute("data-sections-key", sec.drawn || "");
        // Done, unless newer sections were asked for after this request left.
        if (seq > sec.wantedAt || sec.want === sec.drawn) { sec.need = false; }
        scheduleSections(false);
      });
    }).catch(function (failure) {
      if (seq !== sec.issued) { return; }  // a later request decides
      var delay = vr.retryDelay(failure, sec.attempt++);
      sec.notBefore = Date.now() + delay;
      sec.need = true;
      failed("sections", failure, delay);
      scheduleSections(true);
    }).then(function () { sec.pending -= 1; sectionsState(); });
  }

  // --- the run's state: the stream's snapshots, else polls of the JSON API
  function apply(d, breakdown) {
    render(d);
    renderGroups("model", breakdown.models);
    renderGroups("provider", breakdown.providers);
    succeeded("run");
  }

  var poll = { timer: null, busy: false, attempt: 0, notBefore: 0, shown: null };
  // One read of the run and its breakdown (after an action, or while the stream is down):
  // resolves with the run, or null when it failed.
  function pollRun() {
    if (poll.busy) { return Promise.resolve(null); }
    poll.busy = true;
    return Promise.all([vr.readData(api), vr.readData(api + "/breakdown")]).then(function (got) {
      var d = got[0];
      poll.attempt = 0;
      apply(d, got[1]);
      // No sections key in the API: what the sections show is compared instead.
      var shown = JSON.stringify([d.results, d.progress.failed, d.judging.failed, d.summary,
        d.sample_percentage, d.status]);
      if (shown !== poll.shown) { wantSections(null, terminal(d.status)); }
      poll.shown = shown;
      return d;
    }, function (failure) {
      var delay = vr.retryDelay(failure, poll.attempt++);
      poll.notBefore = Date.now() + delay;
      failed("run", failure, delay);
      return null;
    }).then(function (d) { poll.busy = false; return d; });
  }
  function schedulePoll(delay) {
    if (poll.timer) { clearTimeout(poll.timer); }
    poll.timer = setTimeout(safetyPoll, Math.max(delay, poll.notBefore - Date.now()));
  }
  function safetyPoll() {
    poll.timer = null;
    if (stream.up || stream.ended) { return; }
    if (document.hidden) { schedulePoll(POLL_MS); return; }
    pollRun().then(function (d) {
      if (stream.up || stream.ended) { return; }
      if (d && terminal(d.status) && !stream.source) {  // over: nothing more to follow
        stream.ended = true;
        live("ended");
        return;
      }
      if (d && !stream.source) { connect(); }  // the server answers again: back to the stream
      schedulePoll(d ? POLL_MS : 0);  // after a failure, when Retry-After says (notBefore)
    });
  }

  // --- the stream
  var stream = { source: null, up: false, ended: false };
  // data-stream on the page: "open", "down" (reconnecting or refused) or "ended".
  function live(state) {
    root.setAttribute("data-stream", state);
    var l = byId("live");
    if (l) { l.hidden = state !== "open"; }
  }

  function connect() {
    if (stream.source) { return; }
    stream.ended = false;
    if (!window.EventSource) { schedulePoll(0); return; }
    var source = new EventSource(api + "/events/stream?snapshots=true&after=" + lastSeq);
    stream.source = source;
    source.onopen = function () { stream.up = true; live("open"); };
    source.onmessage = function (e) {
      try {
        var ev = JSON.parse(e.data);
        if (ev.seq > lastSeq) { lastSeq = ev.seq; logEvent(ev); }
      } catch (err) { /* ignore a malformed event */ }
    };
    source.addEventListener("snapshot", function (e) {
      var snap;
      try { snap = JSON.parse(e.data); } catch (err) { return; }
      apply(snap.run, snap.breakdown);
      wantSections(snap.sections, false);
    });
    source.addEventListener("end", function (e) {
      source.close();
      stream.source = null; stream.up = false; stream.ended = true;
      live("ended");
      var end = {};
      try { end = JSON.parse(e.data); } catch (err) { /* drawn as it is */ }
      if (end.status !== "deleted") { wantSections(sec.want, true); }  // once more at the end
    });
    source.onerror = function () {
      stream.up = false;
      live("down");
      if (source.readyState === 2) {  // CLOSED: refused (e.g. 429), the browser gave up on it
        source.close();
        stream.source = null;
        failed("run", { code: "STREAM", error: "the live updates were refused" }, 0);
        schedulePoll(0);  // learns when to come back (Retry-After), then reconnects
      } else if (!poll.timer) {
        schedulePoll(POLL_MS);  // the browser reconnects by itself; the poll covers a long gap
      }
    };
  }

  // --- the controls
  function scope() { return root.querySelector(".run-controls"); }
  function showError(failure) {
    vr.showFailure(scope().querySelector("[data-error]"), failure);
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
    return vr.api(method, url, body).then(function (data) {
      control.removeAttribute("data-busy");
      var after = control.getAttribute("data-after");
      if (after) { window.location.assign(after); return; }
      text("action-status", label + ": done" + (data && data.status ? ", the run is " + data.status : "") + ".");
      if (data && data.status) {
        var status = byId("run-status");
        if (status) { status.textContent = data.status; status.className = "status status-" + data.status; }
      }
      return pollRun().then(function () { connect(); });
    }, function (failure) {
      control.removeAttribute("data-busy");
      showError(failure);
      return pollRun();
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
        .then(function () { wantSections(null, true); });
    });
  }

  // Judge again: the judges named (commas or spaces between them), added or replacing.
  var judge = byId("judge-form");
  if (judge) {
    judge.addEventListener("submit", function (event) {
      event.preventDefault();
      var names = judge.elements.judges.value.split(/[\s,]+/).filter(function (n) { return n; });
      var body = { judges: names, replace: judge.elements.replace.checked };
      perform(judge.querySelector("fieldset"), judge.getAttribute("data-call"), body, "Judge")
        .then(function () { wantSections(null, true); });
    });
  }

  // Rename: any state; the heading, the title and the field show the name as stored.
  var rename = byId("rename-form");
  if (rename) {
    rename.addEventListener("submit", function (event) {
      event.preventDefault();
      var spec = rename.getAttribute("data-call"), space = spec.indexOf(" ");
      var fieldset = rename.querySelector("fieldset");
      clearError();
      fieldset.disabled = true;
      vr.api(spec.slice(0, space), spec.slice(space + 1), { name: rename.elements.name.value })
        .then(function (data) {
          text("run-name", data.name);
          rename.elements.name.value = data.name;
          document.title = data.name + " · ValueRank";
          text("action-status", "Renamed: " + data.name + ".");
        }, showError)
        .then(function () { fieldset.disabled = false; });
    });
  }

  // Export: a POST (it needs the CSRF token), saved as the file the server names.
  var exporter = byId("export-run");
  if (exporter) {
    exporter.addEventListener("click", function () {
      clearError();
      exporter.disabled = true;
      vr.download(exporter.getAttribute("data-export"), "run-" + runId + ".zip").then(function (saved) {
        text("action-status", "Export: " + saved.name + " downloaded.");
      }).catch(function (failure) {
        showError(failure.code ? failure : { code: "NETWORK", error: "the export failed", hint: null });
      }).then(function () { exporter.disabled = false; });
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !stream.up && !stream.ended && poll.timer) { schedulePoll(0); }
  });
  sectionsState();
  connect();
})();
