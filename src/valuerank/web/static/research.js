// Actions of the research pages (definitions, analysis, compare, settings, validation): forms
// and buttons marked `data-api="METHOD /api/path"` call the JSON API with the session cookie
// and the CSRF token, and show the envelope's error and hint in the page. Plain DOM, no CDN.
(function () {
  "use strict";

  var api = window.valuerank.api;

  // The line a parser error names: "file.md:12: …" or "<input>:12:3: …" or "line 12".
  function errorLine(message) {
    var m = /:(\d+)(?::\d+)?: /.exec(message) || /\bline (\d+)\b/.exec(message);
    return m ? parseInt(m[1], 10) : null;
  }

  function showError(scope, failure) {
    var box = scope.querySelector("[data-error]");
    if (!box) { return; }
    window.valuerank.showFailure(box, failure);
    var line = errorLine(failure.error);
    var editor = scope.querySelector("textarea[name=markdown]");
    if (line !== null && editor && editor.id === "markdown") { markLine(editor, line); }
  }

  function clearError(scope) {
    var box = scope.querySelector("[data-error]");
    if (box) { box.hidden = true; box.textContent = ""; }
    var editor = scope.querySelector("#markdown");
    if (editor) { editor.removeAttribute("data-error-line"); renderGutter(editor); }
  }

  function fillTemplate(template, data) {
    return template.replace(/\{(\w+)\}/g, function (_, key) {
      return encodeURIComponent(data && data[key] !== undefined ? data[key] : "");
    });
  }

  function afterSuccess(el, data) {
    // setup.js listens: it refreshes the parts of the page named by `data-refresh`.
    el.dispatchEvent(new CustomEvent("valuerank:done", { bubbles: true, detail: data }));
    var target = el.getAttribute("data-redirect");
    if (target) { window.location.assign(fillTemplate(target, data)); return; }
    var show = el.getAttribute("data-show");
    if (show) {
      var out = document.getElementById(show);
      if (out) {
        var field = el.getAttribute("data-show-field");
        out.textContent = field ? String(data[field]) : JSON.stringify(data, null, 2);
        out.hidden = false;
        var wrap = out.closest("[hidden]");
        if (wrap) { wrap.hidden = false; }
      }
      return;
    }
    if (el.hasAttribute("data-reload")) { window.location.reload(); }
  }

  function fieldValue(input) {
    if (input.type === "checkbox") { return input.checked; }
    // A list of names (model ids), separated by commas or blanks.
    if (input.hasAttribute("data-list")) { return input.value.split(/[\s,]+/).filter(function (v) { return v; }); }
    if (input.type === "number") { return input.value === "" ? null : Number(input.value); }
    return input.value;
  }

  // A definition's fields from the editor's form (dimensions from their fieldsets).
  function definitionFields(form) {
    var fields = {};
    ["name", "category", "base_id", "preamble", "template", "matching_rules"].forEach(function (name) {
      var input = form.elements[name];
      if (!input) { return; }
      if (input.hasAttribute("data-optional") && input.value === "") { return; }
      fields[name] = input.value;
    });
    fields.dimensions = Array.prototype.map.call(form.querySelectorAll(".dimension-field"), function (set) {
      return {
        name: set.querySelector(".dim-name").value,
        levels: Array.prototype.map.call(set.querySelectorAll("tr.level"), function (row) {
          var options = row.querySelector(".lv-options").value.split(";").map(function (o) { return o.trim(); });
          return {
            score: Number(row.querySelector(".lv-score").value),
            label: row.querySelector(".lv-label").value,
            options: options.filter(function (o) { return o !== ""; })
          };
        })
      };
    });
    return fields;
  }

  function formBody(form, url) {
    var body = {};
    var used = {};
    url.replace(/\{(\w+)\}/g, function (_, key) { used[key] = true; return ""; });
    if (form.hasAttribute("data-fields")) {
      var fields = definitionFields(form);
      var label = form.elements.label && form.elements.label.value;
      if (form.getAttribute("data-fields") === "changes") { body.changes = fields; } else { body = fields; }
      if (label) { body.label = label; }
      return body;
    }
    Array.prototype.forEach.call(form.elements, function (input) {
      if (!input.name || used[input.name] || input.type === "file" || input.type === "submit") { return; }
      if (input.hasAttribute("data-optional") && input.value === "") { return; }
      body[input.name] = fieldValue(input);
    });
    return body;
  }

  function splitApi(spec) {
    var space = spec.indexOf(" ");
    return { method: spec.slice(0, space), url: spec.slice(space + 1) };
  }

  function submitForm(event) {
    var form = event.target;
    if (!form.hasAttribute || !form.hasAttribute("data-api")) { return; }
    event.preventDefault();
    var call = splitApi(form.getAttribute("data-api"));
    var values = {};
    Array.prototype.forEach.call(form.elements, function (i) { if (i.name) { values[i.name] = i.value; } });
    var url = call.url.replace(/\{(\w+)\}/g, function (_, k) { return encodeURIComponent(values[k] || ""); });
    var button = form.querySelector("button[type=submit]");
    clearError(form);
    if (button) { button.disabled = true; }
    // A definition file is checked first, so its error is shown at its line and nothing is sent.
    var checked = form.hasAttribute("data-check") ? checkMarkdown(form) : Promise.resolve(true);
    checked.then(function (valid) {
      if (!valid) { return null; }
      return api(call.method, url, formBody(form, call.url));
    }).then(function (data) {
      if (data === null) { return; }
      afterSuccess(form, data);
    }, function (failure) {
      showError(form, failure);
    }).then(function () { if (button) { button.disabled = false; } });
  }

  function clickButton(event) {
    var button = event.target.closest ? event.target.closest("button[data-api]") : null;
    if (!button) { return; }
    var question = button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { return; }
    var call = splitApi(button.getAttribute("data-api"));
    var raw = button.getAttribute("data-body");
    var from = button.getAttribute("data-body-from");  // "field:key,field:key" of its form
    if (from && button.form) {
      var built = {};
      from.split(",").forEach(function (pair) {
        var parts = pair.split(":");
        built[parts[1]] = button.form.elements[parts[0]].value;
      });
      raw = JSON.stringify(built);
    }
    var scope = button.closest("[data-scope]") || button.parentElement;
    clearError(scope);
    button.disabled = true;
    api(call.method, call.url, raw ? JSON.parse(raw) : undefined).then(function (data) {
      afterSuccess(button, data);
    }, function (failure) {
      showError(scope, failure);
    }).then(function () { button.disabled = false; });
  }

  // --- the definition editor: the live check, line numbers, the error's line, tabs, dimensions.
  function checkMarkdown(form) {
    var editor = form.querySelector("textarea[name=markdown]");
    var status = document.getElementById("check-status");
    return api("POST", "/api/definitions/validate", { markdown: editor.value }).then(function (result) {
      if (result.valid) {
        clearError(form);
        if (status) { status.textContent = "Valid: " + result.name + " (" + result.dimensions.join(", ") + ")"; }
        return true;
      }
      var e = result.error;
      var where = e.line ? "line " + e.line + (e.column ? ", column " + e.column : "") + ": " : "";
      showError(form, { code: "INVALID_FILE", error: where + e.message, hint: e.hint });
      if (status) { status.textContent = "Not valid yet" + (e.line ? " (line " + e.line + ")" : ""); }
      return false;
    });
  }

  function setupLiveCheck() {
    var form = document.querySelector("form[data-check]");
    if (!form) { return; }
    var editor = form.querySelector("textarea[name=markdown]");
    var timer = null;
    editor.addEventListener("input", function () {
      if (timer) { clearTimeout(timer); }
      timer = setTimeout(function () {
        timer = null;
        if (editor.value.trim()) { checkMarkdown(form).catch(function (f) { showError(form, f); }); }
      }, 800);
    });
  }

  function renderGutter(editor) {
    var gutter = document.getElementById("gutter");
    if (!gutter) { return; }
    var count = editor.value.split("\n").length;
    var bad = parseInt(editor.getAttribute("data-error-line") || "0", 10);
    gutter.textContent = "";
    for (var i = 1; i <= count; i++) {
      var line = document.createElement(i === bad ? "mark" : "span");
      line.textContent = String(i);
      if (i === bad) { line.id = "error-line"; line.title = "the error is on this line"; }
      gutter.appendChild(line);
      gutter.appendChild(document.createTextNode("\n"));
    }
    gutter.scrollTop = editor.scrollTop;
  }

  function markLine(editor, line) {
    editor.setAttribute("data-error-line", String(line));
    renderGutter(editor);
    var lines = editor.value.split("\n");
    var start = 0;
    for (var i = 0; i < line - 1 && i < lines.length; i++) { start += lines[i].length + 1; }
    var end = start + (lines[line - 1] || "").length;
    editor.focus();
    editor.setSelectionRange(start, end);
    var lineHeight = parseFloat(window.getComputedStyle(editor).lineHeight) || 18;
    editor.scrollTop = Math.max(0, (line - 3) * lineHeight);
    renderGutter(editor);
  }

  function setupEditor() {
    var editor = document.getElementById("markdown");
    if (!editor) { return; }
    renderGutter(editor);
    editor.addEventListener("input", function () { renderGutter(editor); });
    editor.addEventListener("scroll", function () {
      var gutter = document.getElementById("gutter");
      if (gutter) { gutter.scrollTop = editor.scrollTop; }
    });
  }

  function setupTabs() {
    var tabs = document.querySelectorAll('[role="tab"]');
    Array.prototype.forEach.call(tabs, function (tab) {
      tab.addEventListener("click", function () {
        Array.prototype.forEach.call(tabs, function (other) {
          var selected = other === tab;
          other.setAttribute("aria-selected", selected ? "true" : "false");
          var panel = document.getElementById(other.getAttribute("aria-controls"));
          if (panel) { panel.hidden = !selected; }
        });
      });
    });
  }

  function levelRow() {
    var row = document.createElement("tr");
    row.className = "level";
    [["number", "lv-score", "Score"], ["text", "lv-label", "Label"], ["text", "lv-options", "Options"]].forEach(function (spec) {
      var cell = document.createElement("td");
      var input = document.createElement("input");
      input.type = spec[0]; input.className = spec[1]; input.setAttribute("aria-label", spec[2]);
      if (spec[0] === "number") { input.min = "1"; }
      cell.appendChild(input);
      row.appendChild(cell);
    });
    return row;
  }

  function setupDimensions() {
    var box = document.getElementById("dimensions");
    if (!box) { return; }
    box.addEventListener("click", function (event) {
      if (event.target.classList.contains("add-level")) {
        event.target.parentElement.querySelector("tbody").appendChild(levelRow());
      }
    });
    var add = document.getElementById("add-dimension");
    if (!add) { return; }
    add.addEventListener("click", function () {
      var n = box.querySelectorAll(".dimension-field").length + 1;
      var set = document.createElement("fieldset");
      set.className = "dimension-field";
      var legend = document.createElement("legend");
      legend.textContent = "Dimension " + n;
      var label = document.createElement("label");
      label.htmlFor = "dim-new-" + n; label.textContent = "Name";
      var name = document.createElement("input");
      name.id = "dim-new-" + n; name.className = "dim-name"; name.required = true;
      var table = document.createElement("table");
      table.className = "levels";
      table.appendChild(document.createElement("tbody")).appendChild(levelRow());
      var more = document.createElement("button");
      more.type = "button"; more.className = "add-level"; more.textContent = "Add a level";
      [legend, label, name, table, more].forEach(function (el) { set.appendChild(el); });
      box.insertBefore(set, add);
      name.focus();
    });
  }

  // A file input that loads its file into a textarea (and its name into a hidden field).
  function setupFileInputs() {
    Array.prototype.forEach.call(document.querySelectorAll("input[data-load-into]"), function (input) {
      input.addEventListener("change", function () {
        var file = input.files && input.files[0];
        if (!file) { return; }
        file.text().then(function (text) {
          var target = document.getElementById(input.getAttribute("data-load-into"));
          if (target) { target.value = text; }
          var name = document.getElementById(input.getAttribute("data-name-into"));
          if (name) { name.value = file.name; }
        });
      });
    });
  }

  // A page waiting on a queued job (a comparison) reloads until it is done.
  function setupPolling() {
    var waiting = document.querySelector("[data-poll-reload]");
    if (!waiting) { return; }
    var delay = parseInt(waiting.getAttribute("data-poll-reload"), 10) || 1500;
    setTimeout(function () { window.location.reload(); }, delay);
  }

  document.addEventListener("submit", submitForm);
  document.addEventListener("click", clickButton);
  setupEditor();
  setupLiveCheck();
  setupTabs();
  setupDimensions();
  setupFileInputs();
  setupPolling();
  window.valuerank.errorLine = errorLine;
})();
