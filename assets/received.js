// admit: the copy button of the page that shows a new signup's private
// removal link. Served as a file: the CSP forbids inline scripts. Without
// it the button stays hidden and the link can be selected and copied by
// hand.
(function () {
  "use strict";

  // copyByHand copies text through a selected, hidden text area, for
  // browsers without the asynchronous clipboard.
  function copyByHand(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (e) {
      ok = false;
    }
    document.body.removeChild(area);
    return ok;
  }

  function init() {
    var button = document.getElementById("copy-removal");
    var link = document.querySelector('[data-testid="removal-link"]');
    var status = document.getElementById("copy-status");
    if (!button || !link || !status) {
      return;
    }
    var text = link.getAttribute("href");
    function said(ok) {
      status.textContent = ok
        ? "Copied. Now paste it somewhere you will find it again."
        : "Could not copy here: select the link above and copy it yourself.";
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(
          function () {
            said(true);
          },
          function () {
            said(copyByHand(text));
          }
        );
        return;
      }
      said(copyByHand(text));
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
