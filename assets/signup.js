// admit: the signup form's questions about how the address is written,
// asked inline before the form is sent (docs/signup.md#capital-letters,
// docs/signup.md#typing-hints). The server asks the same questions on a
// page of their own when this script does not run; both write the same
// fields (case, domain), so the server accepts the answer either way.
// Served as a file: the CSP forbids inline scripts.
(function () {
  "use strict";

  // typoDistance is the optimal-string-alignment distance, as the server
  // computes it.
  function typoDistance(a, b) {
    var prev2 = [], prev = [], cur = [], i, j;
    for (j = 0; j <= b.length; j++) {
      prev[j] = j;
    }
    for (i = 1; i <= a.length; i++) {
      cur = [i];
      for (j = 1; j <= b.length; j++) {
        var cost = a[i - 1] === b[j - 1] ? 0 : 1;
        cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
        if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
          cur[j] = Math.min(cur[j], prev2[j - 2] + 1);
        }
      }
      prev2 = prev;
      prev = cur;
    }
    return prev[b.length];
  }

  // suggestion is the well-known domain that domain likely mistypes, or "".
  function suggestion(domain, known) {
    if (domain.length < 5 || known.indexOf(domain) >= 0) {
      return "";
    }
    var best = "", bestDist = 3, ties = 0;
    known.forEach(function (d) {
      var dist = typoDistance(domain, d);
      if (dist < bestDist) {
        best = d;
        bestDist = dist;
        ties = 0;
      } else if (dist === bestDist) {
        ties++;
      }
    });
    return ties > 0 ? "" : best;
  }

  function fill(root, testid, text) {
    var el = root.querySelector('[data-testid="' + testid + '"]');
    if (el) {
      el.textContent = text;
    }
  }

  function init() {
    var form = document.getElementById("signup-form");
    var tpl = document.getElementById("signup-questions");
    var email = document.getElementById("email");
    if (!form || !tpl || !email || !tpl.content) {
      return;
    }
    var known = (form.getAttribute("data-known-domains") || "").split(" ");
    var submit = form.querySelector('button[type="submit"]');
    var asked = [];

    // A changed address is asked about afresh at the next send.
    email.addEventListener("input", function () {
      asked.forEach(function (el) {
        el.remove();
      });
      asked = [];
    });

    form.addEventListener("submit", function (ev) {
      if (form.querySelector('[name="case"], [name="domain"]')) {
        return; // answered, or asked by the server already
      }
      var permission = document.getElementById("permission");
      var typed = email.value.trim();
      var at = typed.lastIndexOf("@");
      if (at < 1 || !permission || !permission.checked) {
        return; // the server reports what is missing
      }
      var local = typed.slice(0, at), domain = typed.slice(at + 1).toLowerCase();
      var address = local + "@" + domain;
      var fixed = suggestion(domain, known);
      var capitals = local.toLowerCase() !== local;
      if (!fixed && !capitals) {
        return;
      }
      ev.preventDefault();
      var first = null;
      if (fixed) {
        var dq = tpl.content.querySelector("#domain-question").cloneNode(true);
        fill(dq, "domain-suggested-domain", fixed);
        fill(dq, "domain-typed-domain", "@" + domain);
        fill(dq, "domain-typed", address);
        fill(dq, "domain-suggested", local + "@" + fixed);
        form.insertBefore(dq, submit);
        asked.push(dq);
        first = first || dq;
      }
      if (capitals) {
        var cq = tpl.content.querySelector("#case-question").cloneNode(true);
        fill(cq, "case-typed", address);
        fill(cq, "case-lower", local.toLowerCase() + "@" + domain);
        form.insertBefore(cq, submit);
        asked.push(cq);
        first = first || cq;
      }
      var status = document.getElementById("signup-questions-status");
      if (status) {
        status.textContent = "Before you join: check how your address is written below, then send the form again.";
      }
      first.querySelector("input").focus();
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
