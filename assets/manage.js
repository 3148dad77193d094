// admit removal page (spec 000/001). Served as a file: the CSP forbids inline
// scripts. The form works without it; this only saves pasting the token.
//
// 1. /manage/#<64 lowercase hex>: copy the token from the fragment into
//    form#remove-form input[name=token]. The fragment never reaches the server.
// 2. When the visitor submits that form, drop the fragment from the current
//    history entry, so Back does not lead to a URL that still holds the token.
// 3. When the page shows a confirmed removal (body[data-removal-confirmed] or
//    #removal-confirmed), drop any fragment. The removal page loads no htmx:
//    the confirmation always arrives as a page of its own.
(function () {
  "use strict";
  var TOKEN = /^#([0-9a-f]{64})$/;

  function clearFragment() {
    if (window.location.hash && window.history && window.history.replaceState) {
      var l = window.location;
      window.history.replaceState(window.history.state, "", l.pathname + l.search);
    }
  }

  function removalConfirmed() {
    return document.body.hasAttribute("data-removal-confirmed") ||
      document.getElementById("removal-confirmed") !== null;
  }

  function init() {
    if (removalConfirmed()) {
      clearFragment();
      return;
    }
    var form = document.getElementById("remove-form");
    if (!form) {
      return;
    }
    var m = TOKEN.exec(window.location.hash);
    var field = form.querySelector("input[name=token]");
    if (m && field && field.value === "") {
      field.value = m[1];
    }
    form.addEventListener("submit", clearFragment);
  }

  // 4. A page restored from the back/forward cache keeps what was typed:
  //    empty the field unless the address itself carries a token.
  window.addEventListener("pageshow", function (e) {
    var field = document.querySelector("#remove-form input[name=token]");
    if (e.persisted && field && !TOKEN.test(window.location.hash)) {
      field.value = "";
    }
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
