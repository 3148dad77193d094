// owner.js: the owner console's enhancements. Every page works without it;
// with it:
//  - the queue's "choose all" becomes a checkbox that chooses every entry on
//    the page in place, and the bulk bar counts the chosen entries;
//  - after htmx replaces the queue (a tab, a search, a page, an action),
//    focus and scroll return to the results, never to <body>;
//  - a dangerous action's confirmation (a GET page, or the queue decline's
//    first step) opens in a modal dialog: focus moves into it, Escape or
//    Cancel closes it and returns focus to the button that opened it;
//  - copy buttons copy an invitation code or message, and a secret shown
//    once is wiped when the page is left.
// docs/console.md describes each.
(function () {
  "use strict";

  // enhance shows what needs JavaScript and hides its no-script stand-ins.
  function enhance(root) {
    root.querySelectorAll("[data-select-all]").forEach(function (box) {
      box.hidden = false;
      syncSelectAll(box);
    });
    root.querySelectorAll("[data-select-all-link]").forEach(function (a) {
      a.hidden = true;
    });
    syncCount(root);
    if (navigator.clipboard || document.queryCommandSupported && document.queryCommandSupported("copy")) {
      root.querySelectorAll("[data-copy]").forEach(function (b) {
        b.hidden = false;
      });
    }
  }

  function entryBoxes(box) {
    var table = box.closest("table");
    return table ? Array.prototype.slice.call(table.querySelectorAll('input[name="entryIds"]')) : [];
  }

  // syncSelectAll shows whether all, some or none of the page is chosen.
  function syncSelectAll(box) {
    var boxes = entryBoxes(box);
    var n = boxes.filter(function (b) { return b.checked; }).length;
    box.checked = boxes.length > 0 && n === boxes.length;
    box.indeterminate = n > 0 && n < boxes.length;
  }

  // syncCount says in the queue's bulk bar how many entries are chosen.
  function syncCount(root) {
    root.querySelectorAll("[data-bulk-count]").forEach(function (p) {
      var form = p.closest("form");
      var n = form ? form.querySelectorAll('input[name="entryIds"]:checked').length : 0;
      var text = n === 0 ? "No entry chosen" : n === 1 ? "1 entry chosen" : n + " entries chosen";
      if (p.textContent !== text) p.textContent = text;
      p.hidden = false;
    });
    // The bar appears only while something is chosen (without JavaScript
    // it is always there: nothing can tell it).
    root.querySelectorAll(".bulk-actions").forEach(function (bar) {
      var form = bar.closest("form");
      var n = form ? form.querySelectorAll('input[name="entryIds"]:checked').length : 0;
      bar.classList.toggle("bulk-idle", n === 0);
    });
  }

  document.addEventListener("change", function (e) {
    var t = e.target;
    if (t.matches("[data-select-all]")) {
      entryBoxes(t).forEach(function (b) { b.checked = t.checked; });
    } else if (t.matches('input[name="entryIds"]')) {
      var table = t.closest("table");
      var all = table && table.querySelector("[data-select-all]");
      if (all) syncSelectAll(all);
    }
    if (t.matches('[data-select-all], input[name="entryIds"]')) syncCount(document);
  });

  // focusQueue puts the keyboard back where the owner was working: the
  // message of a failed action, or else the results.
  function focusQueue() {
    var block = document.getElementById("queue-block");
    if (!block) return;
    var target = block.querySelector('[role="alert"]') || document.getElementById("queue-results") || block.querySelector("h2");
    if (!target) return;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
    block.scrollIntoView({ block: "start" });
  }

  document.addEventListener("htmx:afterSettle", function (e) {
    enhance(document);
    var t = e.detail && e.detail.target;
    if (t && t.id === "queue-block") focusQueue();
  });

  // The confirmation dialog.
  var opener = null;

  function dialog() {
    var d = document.getElementById("confirm-dialog");
    if (d) return d;
    d = document.createElement("dialog");
    d.id = "confirm-dialog";
    d.className = "confirm-dialog";
    d.setAttribute("aria-labelledby", "confirm-title");
    d.setAttribute("aria-describedby", "confirm-consequences");
    d.setAttribute("data-testid", "confirm-dialog");
    // The browser fires "close" some time after the dialog has closed
    // (after close(), Cancel or Escape), not at once: by then the owner may
    // have pressed the button again and the dialog be open with a new
    // confirmation. That event belongs to the earlier one and must leave the
    // open dialog, its content and its focus alone.
    d.addEventListener("close", function () {
      if (d.open) return;
      d.innerHTML = "";
      if (opener && document.contains(opener)) opener.focus();
      opener = null;
    });
    d.addEventListener("click", function (e) {
      var cancel = e.target.closest("[data-confirm-cancel]");
      if (cancel) {
        e.preventDefault();
        d.close();
      }
    });
    document.body.appendChild(d);
    return d;
  }

  function openDialog(html, from) {
    var d = dialog();
    d.innerHTML = "<article>" + html + "</article>";
    opener = from;
    d.showModal();
    var first = d.querySelector("select, input:not([type=hidden]), [data-confirm-cancel]");
    if (first) first.focus();
  }

  // A GET form that leads to a confirmation page opens it in the dialog.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.matches("form[data-confirm]")) return;
    e.preventDefault();
    var from = e.submitter || form.querySelector("button");
    var params = new URLSearchParams(new FormData(form)).toString();
    var url = form.getAttribute("action") + (params ? "?" + params : "");
    fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) { openDialog(html, from); })
      .catch(function () { window.location.assign(url); });
  });

  // The queue's decline posts its first step (which changes nothing) and
  // shows the answer, the confirmation, in the dialog.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest("button[data-confirm-post]");
    if (!btn || !btn.form) return;
    e.preventDefault();
    var form = btn.form;
    if (!form.reportValidity()) return;
    var body = new URLSearchParams(new FormData(form));
    fetch(btn.formAction, { method: "POST", body: body, credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (r) {
        return r.text().then(function (html) { return { ok: r.ok, html: html }; });
      })
      .then(function (res) {
        if (res.ok && res.html.indexOf('id="confirm-block"') >= 0) {
          openDialog(res.html, btn);
          return;
        }
        // A refused first step answers the queue with its message.
        var block = document.getElementById("queue-block");
        var tpl = document.createElement("template");
        tpl.innerHTML = res.html.trim();
        var fresh = tpl.content.firstElementChild;
        if (block && fresh && fresh.id === "queue-block") {
          block.replaceWith(fresh);
          if (window.htmx) window.htmx.process(fresh);
          enhance(fresh);
          focusQueue();
        } else {
          form.submit();
        }
      })
      .catch(function () { form.requestSubmit(btn); });
  });

  // Copy buttons.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest("button[data-copy]");
    if (!btn) return;
    var src = document.getElementById(btn.getAttribute("data-copy"));
    if (!src) return;
    var text = "value" in src && src.tagName === "TEXTAREA" ? src.value : src.textContent.trim();
    var status = document.querySelector("[data-copy-status]");
    function done(ok) {
      if (status) status.textContent = ok ? "Copied." : "Select the text and copy it.";
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      return;
    }
    var range = document.createRange();
    range.selectNodeContents(src);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    if (src.select) src.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
    done(ok);
  });

  // A secret shown once ([data-once]) never comes back from the browser's
  // back-forward cache: it is wiped as the page is left, and a page
  // restored from that cache loads again (and then says it was shown).
  window.addEventListener("pagehide", function (e) {
    if (!e.persisted) return;
    document.querySelectorAll("[data-once]").forEach(function (el) {
      if (el.tagName === "TEXTAREA") el.value = "";
      el.textContent = "";
    });
  });
  window.addEventListener("pageshow", function (e) {
    if (e.persisted && document.querySelector("[data-once]")) window.location.reload();
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  } else {
    enhance(document);
  }
})();
