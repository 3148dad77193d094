// admit: ClerkJS glue for Clerk mode. ClerkJS itself is loaded from the
// Frontend API by a <script data-clerk-publishable-key> tag. Once loaded it
// keeps the short-lived __session cookie fresh; this file mounts the sign-in
// component where the page asks for it and signs out of Clerk before the
// server-side sign-out form submits. No inline script: the CSP forbids it.
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
      if (body.getAttribute("data-clerk-mount") === "sign-in") {
        if (clerk.user) {
          window.location.assign(redirect);
          return;
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
