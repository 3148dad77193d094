// admit: ClerkJS glue for Clerk mode. ClerkJS itself is loaded from the
// Frontend API by a <script data-clerk-publishable-key> tag. Once loaded it
// keeps the short-lived __session cookie fresh; this file mounts the sign-in
// component where the page asks for it and signs out of Clerk before the
// server-side sign-out form submits. No inline script: the CSP forbids it.
//
// After signing in, ClerkJS goes to data-clerk-redirect: the sign-in page
// itself with the return target, where the server sends a signed-in visitor
// on to the page they came from (or their landing page).
(function () {
  "use strict";
  window.addEventListener("load", function () {
    var clerk = window.Clerk;
    if (!clerk) {
      return;
    }
    var body = document.body;
    var redirect = body.getAttribute("data-clerk-redirect") || "/";
    if (redirect.charAt(0) !== "/" || redirect.charAt(1) === "/") {
      redirect = "/";
    }
    clerk.load().then(function () {
      var mount = body.getAttribute("data-clerk-mount");
      var retried = "admit-sign-in-retried";
      if (mount !== "sign-in") {
        try {
          window.sessionStorage.removeItem(retried);
        } catch (e) {}
      }
      if (mount === "continue") {
        // Signed in: go on to where the server says sign-in leads.
        window.location.replace(redirect);
        return;
      }
      if (mount === "sign-in") {
        if (clerk.user) {
          // Signed in to Clerk, but the server did not see the session yet
          // (its short-lived token had expired): ClerkJS has refreshed it,
          // so ask once more. Only once, so a refused session cannot loop.
          var tried = false;
          try {
            tried = window.sessionStorage.getItem(retried) === "1";
            window.sessionStorage.setItem(retried, "1");
          } catch (e) {
            tried = true;
          }
          if (!tried) {
            window.location.assign(redirect);
            return;
          }
        }
        var el = document.getElementById("clerk-sign-in");
        if (el) {
          clerk.mountSignIn(el, {
            forceRedirectUrl: redirect,
            signUpForceRedirectUrl: redirect,
          });
        }
      }
      var form = document.getElementById("sign-out-form");
      if (form) {
        form.addEventListener("submit", function (e) {
          e.preventDefault();
          clerk.signOut().finally(function () {
            form.submit();
          });
        });
      }
    });
  });
})();
