// Who is signed in, on every page: the header shows the user and organisation (GET
// /api/auth/me), an organisation switcher when the user has several (POST /api/auth/switch),
// and "Sign out" (POST /api/auth/logout). The sign-in page posts its form to
// POST /api/auth/login and goes back to the page that asked for it. Plain DOM, no CDN.
(function () {
  "use strict";

  var call = window.valuerank.api;
  var show = window.valuerank.showFailure;

  // --- the header -----------------------------------------------------------------------
  function fillAccount(me) {
    window.valuerank.setCsrf(me.csrf_token);
    var who = document.getElementById("account-who");
    if (who) {
      var name = me.via === "local" ? "local admin (this machine)" : (me.user && me.user.email) || "signed in";
      who.textContent = "";
      var user = document.createElement("strong");
      user.textContent = name;
      who.appendChild(user);
      who.appendChild(document.createTextNode(" · " + me.org.name + " (" + me.role + ")"));
    }
    var form = document.getElementById("org-switch");
    var select = document.getElementById("org-select");
    // Only a password session moves between organisations (a token acts in its own).
    var canSwitch = me.via === "session" && !me.token_id && me.orgs && me.orgs.length > 1;
    if (!form || !select || !canSwitch) { return; }
    select.textContent = "";
    me.orgs.forEach(function (org) {
      var option = document.createElement("option");
      option.value = org.slug;
      option.textContent = org.name + " (" + org.role + ")";
      option.selected = org.id === me.org.id;
      select.appendChild(option);
    });
    form.hidden = false;
  }

  // After a switch, the same section of the site (an object of the old organisation would
  // be "not found" in the new one).
  function sectionPath() {
    var first = window.location.pathname.split("/")[1] || "";
    return first === "" || first === "runs" ? "/" : "/" + first;
  }

  function setupAccount() {
    var box = document.getElementById("account");
    if (!box || box.getAttribute("data-via") === "anonymous") { return; }
    var error = document.getElementById("account-error");
    call("GET", "/api/auth/me").then(fillAccount, function (failure) { show(error, failure); });
    var form = document.getElementById("org-switch");
    if (form) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        var org = document.getElementById("org-select").value;
        call("POST", "/api/auth/switch", { org: org }).then(function () {
          window.location.assign(sectionPath());
        }, function (failure) { show(error, failure); });
      });
    }
    var out = document.getElementById("sign-out");
    if (out) {
      out.addEventListener("click", function () {
        out.disabled = true;
        call("POST", "/api/auth/logout").then(function () {
          window.location.assign("/login?signed_out=1");
        }, function (failure) {
          out.disabled = false;
          show(error, failure);
        });
      });
    }
  }

  // --- the sign-in page -----------------------------------------------------------------
  function setupLogin() {
    var form = document.getElementById("login-form");
    if (!form) { return; }
    var box = document.getElementById("login-error");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var email = form.elements.email;
      var password = form.elements.password;
      box.hidden = true;
      if (!email.value.trim() || !password.value) {
        show(box, { error: "enter your email and your password" }, "Missing: ");
        (email.value.trim() ? password : email).focus();
        return;
      }
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      call("POST", "/api/auth/login", { email: email.value.trim(), password: password.value }).then(function () {
        window.location.assign(form.getAttribute("data-next") || "/");
      }, function (failure) {
        button.disabled = false;
        if (failure.code === "INVALID_CREDENTIALS") {
          show(box, { error: "the email or the password is wrong.", hint: failure.hint }, "Not signed in: ");
        } else if (failure.code === "RATE_LIMITED") {
          var wait = failure.retryAfter ? " Try again in " + failure.retryAfter + " s." : "";
          show(box, { error: "too many failed sign-ins." + wait }, "Refused: ");
        } else {
          show(box, failure);
        }
        password.value = "";
        password.focus();
      });
    });
  }

  setupAccount();
  setupLogin();
})();
