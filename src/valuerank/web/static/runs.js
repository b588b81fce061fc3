// The runs dashboard and the new-run form. Plain DOM, no framework, no CDN.
//
// Dashboard: the rows' status, progress bar, failures and cost follow GET /api/runs (the same
// filters and page as the table) every few seconds while a shown run is not finished. One
// request updates every row, where one event stream per run would take one of the browser's
// few connections per server each. Polling stops when nothing shown can change, and while
// the tab is hidden. A failed poll shows the "stale, retrying" mark (#runs-stale) and is
// retried when the server's Retry-After says (else 2, 4, 8… s); the next success hides it.
//
// New run: "Estimate the cost" creates the run PENDING (POST /api/eval/runs: nothing is
// queued) and shows its estimate; "Start the run" starts that very run (same frozen scenarios
// and seed: POST /api/eval/runs/{id}/start), "Discard" deletes it (DELETE /api/queue/runs/{id}).
(function () {
  "use strict";

  var POLL_MS = 5000;  // with a run page open too, well within a session's request budget

  function byId(id) { return document.getElementById(id); }
  function money(v) { return v === null || v === undefined ? "–" : "$" + Number(v).toFixed(4); }
  function api() { return window.valuerank.api.apply(null, arguments); }

  var showError = window.valuerank.showFailure;
  function clearError(box) { if (box) { box.hidden = true; box.textContent = ""; } }

  // --- the dashboard
  var FINISHED = { completed: true, failed: true, cancelled: true };

  function setupDashboard() {
    var table = byId("runs");
    if (!table || !table.getAttribute("data-poll")) { return; }
    var url = table.getAttribute("data-poll");
    var firstPage = table.getAttribute("data-first-page") === "true";
    var timer = null;
    var failures = 0;  // failed polls in a row
    var notBefore = 0;  // no poll before this time (Retry-After)
    var stale = byId("runs-stale");

    function rows() {
      var found = {};
      Array.prototype.forEach.call(table.querySelectorAll("tbody tr[data-run-id]"), function (row) {
        found[row.getAttribute("data-run-id")] = row;
      });
      return found;
    }
    function anyActive() {
      return Array.prototype.some.call(table.querySelectorAll("tbody tr[data-status]"), function (row) {
        return !FINISHED[row.getAttribute("data-status")];
      });
    }
    function update(row, run) {
      var p = run.progress;
      row.setAttribute("data-status", run.status);
      var status = row.querySelector('[data-field="status"]');
      status.textContent = run.status;
      status.className = "status status-" + run.status;
      window.valuerank.progressBar(row.querySelector('[data-field="bar"]'), p);
      row.querySelector('[data-field="count"]').textContent = p.completed + "/" + p.total;
      row.querySelector('[data-field="percent"]').textContent = window.valuerank.completedPercent(p) + " %";
      ["failed", "cancelled"].forEach(function (k) {
        var tag = row.querySelector('[data-field="' + k + '"]');
        tag.textContent = p[k] + " " + k;
        tag.hidden = !p[k];
      });
      row.querySelector('[data-field="cost"]').textContent = money(run.cost_usd);
    }
    function poll() {
      timer = null;
      window.valuerank.readData(url).then(function (data) {
        failures = 0;
        window.valuerank.markStale(stale, null);
        var shown = rows();
        var added = 0;
        data.runs.forEach(function (run) {
          if (shown[run.id]) { update(shown[run.id], run); } else { added += 1; }
        });
        // Runs started since the page was drawn belong at the top of the first page.
        if (firstPage && added) { byId("runs-new").hidden = false; }
      }, function (failure) {
        var delay = window.valuerank.retryDelay(failure, failures++);
        notBefore = Date.now() + delay;
        window.valuerank.markStale(stale, failure, delay);
      }).then(schedule);
    }
    function schedule() {
      var live = anyActive() && !document.hidden;
      byId("runs-live").hidden = !live;
      if (live && !timer) { timer = setTimeout(poll, Math.max(POLL_MS, notBefore - Date.now())); }
    }
    document.addEventListener("visibilitychange", schedule);
    var fresh = byId("runs-new");
    if (fresh) { fresh.querySelector("a").href = window.location.href; }
    schedule();
  }

  // --- the new-run form
  function ids(form, name, extra) {
    var chosen = Array.prototype.filter.call(form.querySelectorAll('input[name="' + name + '"]'), function (box) {
      return box.checked;
    }).map(function (box) { return box.value; });
    (form.elements[extra].value || "").split(",").forEach(function (raw) {
      var id = raw.trim();
      if (id && chosen.indexOf(id) < 0) { chosen.push(id); }
    });
    return chosen;
  }

  function runBody(form) {
    var e = form.elements;
    var body = {
      definition_id: e.definition_id.value,
      models: ids(form, "models", "extra_models"),
      judges: ids(form, "judges", "extra_judges"),
      priority: e.priority.value,
      phrasings: e.phrasings.value,
      scale_order: e.scale_order.value,
      name: e.name.value.trim(),
      allow_unknown_models: e.allow_unknown_models.checked
    };
    ["sample_percentage", "sample_seed", "samples_per_scenario", "temperature", "max_tokens", "followup_turns"].forEach(function (key) {
      if (e[key].value !== "") { body[key] = Number(e[key].value); }
    });
    ["summary_model", "system_prompt"].forEach(function (key) {
      if (e[key].value.trim() !== "") { body[key] = e[key].value.trim(); }
    });
    return body;
  }

  function cell(row, value, numeric) {
    var td = document.createElement("td");
    if (numeric) { td.className = "num"; }
    td.textContent = value;
    row.appendChild(td);
  }
  function count(n) { return Number(n).toLocaleString("en"); }

  var ROLES = {probe: "answers", judge: "judges each transcript", summary: "summarises each transcript"};

  function showEstimate(run) {
    var est = run.estimate;
    var sampled = run.scenarios < run.total_scenarios;
    byId("est-plan").textContent =
      (sampled ? run.scenarios + " of " + run.total_scenarios + " scenarios (" + run.sample_percentage + " % sample, seed " + run.sample_seed + ")"
        : "All " + run.total_scenarios + " scenarios") +
      " × " + run.models.length + " model" + (run.models.length === 1 ? "" : "s") +
      (run.phrasings !== "first" || run.scale_order !== "as-written"
        ? " (phrasings " + run.phrasings + ", scale order " + run.scale_order + ")" : "") +
      " → " + count(run.jobs) + " probe job" + (run.jobs === 1 ? "" : "s") + ", " + count(est.calls) + " model calls.";
    var costText;
    if (est.cost_usd !== null && est.cost_usd !== undefined) {
      costText = est.upper_bound
        ? "At most " + money(est.cost_usd) + " (every answer counted at its max tokens)."
        : "About " + money(est.cost_usd) + " (answers sized as in earlier runs of this definition where there are some, the rest at their max tokens).";
    } else {
      costText = "Unknown: no price for " + est.unknown_price_models.join(", ") +
        "; the priced models come to at most " + money(est.known_cost_usd) + ".";
    }
    byId("est-cost").textContent = costText;
    var body = byId("est-models").querySelector("tbody");
    body.textContent = "";
    est.models.forEach(function (m) {
      var row = document.createElement("tr");
      cell(row, m.model, false);
      cell(row, ROLES[m.role] || m.role, false);
      cell(row, count(m.calls), true);
      cell(row, count(m.input_tokens), true);
      cell(row, count(m.output_tokens), true);
      cell(row, m.cost_usd === null ? "no price" : money(m.cost_usd), true);
      cell(row, m.learned_from ? count(m.learned_from) + " earlier transcripts" : "max tokens (at most)", false);
      body.appendChild(row);
    });
    var rubric = byId("est-rubric");
    rubric.hidden = !run.rubric;
    if (run.rubric) {
      var r = run.rubric;
      rubric.textContent = "The judges will read the values rubric " + r.name + " " + r.version_label +
        " (" + r.values + " value" + (r.values === 1 ? "" : "s") +
        (r.default ? "; the default rubric, as the organisation has none" : "") + ").";
    }
    byId("est-note").textContent = "Saved as a pending run (" + run.id.slice(-8) +
      "): nothing is queued until you start it. Judges and summaries read every transcript at its largest.";
    var box = byId("estimate");
    box.hidden = false;
    box.focus();
  }

  function setupNewRun() {
    var form = byId("new-run");
    if (!form) { return; }
    var settings = byId("run-settings");
    var formError = form.querySelector("[data-error]");
    var box = byId("estimate");
    var boxError = box.querySelector("[data-error]");
    var pending = null;  // the run created for the estimate shown

    function editable(on) {
      settings.disabled = !on;
      box.hidden = on;
    }

    // Which rubric the judges will read, shown as soon as a judge is chosen.
    var judgeRubric = byId("judge-rubric");
    function showJudgeRubric() {
      if (judgeRubric) { judgeRubric.hidden = ids(form, "judges", "extra_judges").length === 0; }
    }
    form.addEventListener("change", showJudgeRubric);
    form.addEventListener("input", showJudgeRubric);
    showJudgeRubric();

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      clearError(formError);
      var body = runBody(form);
      if (!body.models.length) {
        showError(formError, { code: "NO_MODEL", error: "choose at least one target model", hint: "tick a model, or type its id under “Other model ids”" });
        return;
      }
      var button = byId("estimate-button");
      button.disabled = true;
      api("POST", "/api/eval/runs", body).then(function (run) {
        pending = run;
        editable(false);
        showEstimate(run);
      }, function (failure) {
        showError(formError, failure);
      }).then(function () { button.disabled = false; });
    });

    byId("est-start").addEventListener("click", function () {
      if (!pending) { return; }
      var start = byId("est-start");
      clearError(boxError);
      start.disabled = true;
      api("POST", "/api/eval/runs/" + encodeURIComponent(pending.id) + "/start").then(function () {
        window.location.assign("/runs/" + encodeURIComponent(pending.id));
      }, function (failure) {
        start.disabled = false;
        showError(boxError, failure);
      });
    });

    byId("est-discard").addEventListener("click", function () {
      if (!pending) { editable(true); return; }
      clearError(boxError);
      api("DELETE", "/api/queue/runs/" + encodeURIComponent(pending.id)).then(function () {
        pending = null;
        editable(true);
        byId("nr-definition").focus();
      }, function (failure) {
        showError(boxError, failure);
      });
    });
  }

  setupDashboard();
  setupNewRun();
})();
