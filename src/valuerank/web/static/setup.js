// The setup steps of the research pages: experiments and their variants, validation tasks,
// tags and the validations asked of models, import and export, API tokens.
// - A form research.js sent (its "valuerank:done" event) re-reads the parts of this page its
//   `data-refresh` names, so a list shows what was just created without a reload.
// - Forms whose call is more than one plain JSON body are sent here: a variant's changes, the
//   validations asked of several models and tags, an upload, a download.
// - While validations are queued (`[data-pending]`) the live parts (`[data-live]`) refresh.
// Every call goes through the JSON API with the CSRF token; failures are shown with
// `valuerank.showFailure` (code, message, details, hint). Plain DOM, no CDN.
(function () {
  "use strict";

  var vr = window.valuerank;
  var POLL_MS = 1500;
  var polling = null;

  function each(list, fn) { Array.prototype.forEach.call(list, fn); }

  // "Task {name} created" filled with the API's answer (text, never markup).
  function fill(template, data) {
    return template.replace(/\{(\w+)\}/g, function (_, key) {
      var value = data ? data[key] : undefined;
      return value === undefined || value === null ? "" : String(value);
    });
  }

  function say(form, message) {
    var box = form.querySelector("[data-status]");
    if (box) { box.textContent = message; }
  }

  function fail(form, failure, lead) {
    vr.showFailure(form.querySelector("[data-error]"), failure, lead);
  }

  function clear(form) {
    var box = form.querySelector("[data-error]");
    if (box) { box.hidden = true; box.textContent = ""; }
    say(form, "");
  }

  function busy(form, yes) {
    var button = form.querySelector("button[type=submit]");
    if (button) { button.disabled = yes; }
  }

  function idsOf(form) {
    return (form.getAttribute("data-refresh") || "").split(/\s+/).filter(Boolean);
  }

  // Read this page again and swap in the elements with these ids; the rest (a form being
  // filled in, the focus) stays as it is.
  function refresh(ids) {
    var init = { credentials: "same-origin", headers: { Accept: "text/html" } };
    return fetch(window.location.href, init).then(function (response) {
      if (!response.ok) {
        throw { code: "HTTP_" + response.status, error: "the page could not be read again", hint: "reload the page" };
      }
      return response.text();
    }, function () {
      throw { code: "NETWORK", error: "the server could not be reached", hint: "check that it is running" };
    }).then(function (html) {
      var fresh = new DOMParser().parseFromString(html, "text/html");
      ids.forEach(function (id) {
        var now = document.getElementById(id);
        var then = fresh.getElementById(id);
        if (now && then) { now.replaceWith(document.importNode(then, true)); }
      });
    });
  }

  // While validations are queued or running, the live parts refresh until they are done.
  function poll() {
    if (polling !== null || !document.querySelector("[data-pending]")) { return; }
    var live = Array.prototype.map.call(document.querySelectorAll("[data-live]"), function (el) { return el.id; });
    polling = setTimeout(function () {
      refresh(live).then(function () {
        polling = null;
        poll();
      }, function () {
        polling = setTimeout(function () { polling = null; poll(); }, POLL_MS * 4);  // a hiccup: later
      });
    }, POLL_MS);
  }

  // A tag just added can be asked about at once: it joins the tag choice.
  function addOption(form, data) {
    var select = document.getElementById(form.getAttribute("data-adds-option") || "");
    if (!select || !data || !data.id) { return; }
    var known = Array.prototype.some.call(select.options, function (o) { return o.value === data.id; });
    if (known) { return; }
    var text = String(data.text || "");
    select.appendChild(new Option(data.id + ": " + (text.length > 60 ? text.slice(0, 57) + "..." : text), data.id));
  }

  document.addEventListener("valuerank:done", function (event) {
    var form = event.target;
    var ids = idsOf(form);
    if (!ids.length) { return; }
    var done = form.getAttribute("data-done");
    if (form.hasAttribute("data-reset")) { form.reset(); }
    addOption(form, event.detail);
    refresh(ids).then(function () {
      if (done) { say(form, fill(done, event.detail)); }
    }, function (failure) { fail(form, failure); });
  });

  // --- an experiment's variant: the changes are the fields filled in
  function variantChanges(form) {
    var changes = {};
    each(form.elements, function (input) {
      if (!input.name || input.type === "submit" || input.value.trim() === "") { return; }
      if (input.hasAttribute("data-list")) {
        changes[input.name] = input.value.split(",").map(function (s) { return s.trim(); }).filter(Boolean);
      } else if (input.type === "number") {
        changes[input.name] = Number(input.value);
      } else {
        changes[input.name] = input.value;
      }
    });
    return changes;
  }

  function addVariant(form) {
    var url = "/api/experiments/" + encodeURIComponent(form.getAttribute("data-variant-experiment")) + "/runs";
    busy(form, true);
    vr.api("POST", url, { changes: variantChanges(form) }).then(function (data) {
      form.reset();
      return refresh(idsOf(form)).then(function () { say(form, fill(form.getAttribute("data-done") || "", data)); });
    }).catch(function (failure) { fail(form, failure); }).then(function () { busy(form, false); });
  }

  // --- validations asked of the chosen models, for one tag or every tag, a request per tag
  function askModels(form) {
    var task = form.getAttribute("data-validate-task");
    var models = Array.prototype.map.call(form.querySelectorAll("input[name=models]:checked"), function (c) { return c.value; });
    var select = form.elements.tag;
    var tags = select.value ? [select.value] : Array.prototype.map.call(select.options, function (o) { return o.value; }).filter(Boolean);
    if (!tags.length) {
      fail(form, { error: "this task has no RA tags yet", hint: "add a tag first" }, "Nothing to validate: ");
      return;
    }
    var body = { models: models };
    var round = form.elements.request_id.value.trim();
    if (round) { body.request_id = round; }
    var queued = 0;
    var asked = 0;
    busy(form, true);
    var sent = tags.reduce(function (previous, tag) {
      return previous.then(function () {
        var url = "/api/assumptions/tasks/" + encodeURIComponent(task) + "/tags/" + encodeURIComponent(tag) + "/validate";
        return vr.api("POST", url, body).then(function (data) { queued += data.enqueued; asked += data.jobs.length; });
      });
    }, Promise.resolve());
    var refusal = null;
    sent.catch(function (failure) { refusal = failure; }).then(function () {
      // What was queued before a refusal shows too: the page lists what is waiting.
      return refresh(idsOf(form));
    }).then(function () {
      if (refusal) { fail(form, refusal); }
      if (queued || !refusal) {
        say(form, queued + " validation" + (queued === 1 ? "" : "s") + " queued" +
          (asked > queued ? " (" + (asked - queued) + " asked before in this round)" : "") + ".");
      }
      poll();
    }, function (failure) { fail(form, refusal || failure); }).then(function () { busy(form, false); });
  }

  // --- upload: one file to POST /api/import as a multipart form
  function resultLine(parent, parts) {
    var line = document.createElement("li");
    parts.forEach(function (part) {
      if (typeof part === "string") { line.appendChild(document.createTextNode(part)); return; }
      var link = document.createElement("a");
      link.href = part.href;
      link.textContent = part.text;
      line.appendChild(link);
    });
    parent.appendChild(line);
  }

  function showImport(box, data, status) {
    box.textContent = "";
    var head = document.createElement("p");
    head.className = "import-kind";
    head.textContent = (status === 201 ? "Imported" : "Already here, nothing written") + ": " + data.kind + ".";
    box.appendChild(head);
    var list = document.createElement("ul");
    list.className = "import-items";
    var fresh = function (item) { return item.created === false ? " (already here)" : ""; };
    if (data.definition) {
      var d = data.definition;
      resultLine(list, ["Definition ", { href: "/definitions/" + d.id, text: d.name + " " + d.version_label }, " · dimensions " + (d.dimensions || []).join(", ")]);
    }
    if (data.rubric) {
      resultLine(list, ["Values rubric " + data.rubric.name + " " + data.rubric.version_label]);
      (data.warnings || []).forEach(function (w) { resultLine(list, ["Warning: " + w]); });
    }
    if (data.kind === "workspace") {
      resultLine(list, [data.definitions + " definition versions and " + data.rubrics + " rubric versions written, " + data.reused_versions + " already here"]);
    }
    (data.runs || []).forEach(function (r) {
      resultLine(list, ["Run ", { href: "/runs/" + r.id, text: r.name || r.cli_run_id }, " · " + r.transcripts + " transcripts" + fresh(r)]);
    });
    box.appendChild(list);
  }

  function upload(form) {
    var input = form.elements.file;
    var file = input.files && input.files[0];
    var box = document.getElementById("import-result");
    box.textContent = "";
    if (!file) { fail(form, { error: "choose a file to import" }, "No file: "); return; }
    var limit = Number(form.getAttribute("data-max-bytes"));
    if (limit && file.size > limit) {  // the server would refuse it (413) after the upload
      fail(form, { code: "PAYLOAD_TOO_LARGE", error: file.name + " is " + file.size + " bytes; uploads are limited to " + limit + " bytes",
        hint: "import a smaller file, or ask the admin to raise VALUERANK_MAX_UPLOAD_BYTES" });
      return;
    }
    var body = new FormData();
    body.append("file", file, file.name);
    busy(form, true);
    fetch(form.getAttribute("data-import"), {
      method: "POST", credentials: "same-origin", body: body,
      headers: { Accept: "application/json", "X-CSRF-Token": vr.csrfToken() }
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (envelope) {
        if (envelope && envelope.success) {
          showImport(box, envelope.data, response.status);
          return refresh(idsOf(form));  // what was imported can be exported at once
        }
        var f = envelope || {};
        throw { code: f.code || "HTTP_" + response.status, error: f.error || response.statusText || "the import failed", hint: f.hint || null, details: f.details || null };
      });
    }, function () {
      throw { code: "NETWORK", error: "the server could not be reached", hint: "check that it is running" };
    }).catch(function (failure) { fail(form, failure); }).then(function () { busy(form, false); });
  }

  // --- download: an export is a POST (it needs the CSRF token), saved under the server's name
  function exportUrl(form) {
    var url = form.getAttribute("data-export").replace(/\{(\w+)\}/g, function (_, key) {
      return encodeURIComponent(form.elements[key].value);
    });
    var query = [];
    each(form.querySelectorAll("input[type=checkbox][name]"), function (box) {
      if (box.checked) { query.push(encodeURIComponent(box.name) + "=true"); }
    });
    return query.length ? url + "?" + query.join("&") : url;
  }

  function download(form) {
    busy(form, true);
    vr.download(exportUrl(form), "valuerank-export").then(function (saved) {
      say(form, saved.name + " downloaded (" + saved.size + " bytes).");
    }).catch(function (failure) { fail(form, failure); }).then(function () { busy(form, false); });
  }

  var HANDLERS = [
    ["data-variant-experiment", addVariant],
    ["data-validate-task", askModels],
    ["data-import", upload],
    ["data-export", download]
  ];

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.hasAttribute || form.hasAttribute("data-api")) { return; }  // research.js sends it
    HANDLERS.forEach(function (pair) {
      if (!form.hasAttribute(pair[0])) { return; }
      event.preventDefault();
      clear(form);
      pair[1](form);
    });
  });

  poll();
})();
