// Behaviour on top of htmx. htmx's own settings live in templates/_htmx_config.html (the htmx-config meta
// tag), which htmx reads before it processes the page. Loaded with <script src>: no eval, no inline handlers.
(function () {
  "use strict";

  var CLIENT_MESSAGE = "data-client-message";

  function flashElement() {
    var flash = document.getElementById("flash");
    if (!flash) {
      flash = document.createElement("div");
      flash.id = "flash";
      var host = document.querySelector("main") || document.body;
      host.insertBefore(flash, host.firstChild);
    }
    return flash;
  }

  function showError(text) {
    var flash = flashElement();
    var message = document.createElement("p");
    message.className = "flash-error";
    message.setAttribute("role", "alert");
    message.setAttribute(CLIENT_MESSAGE, "");
    message.textContent = text;
    clearClientMessages();
    flash.appendChild(message);
  }

  function clearClientMessages() {
    var old = document.querySelectorAll("#flash [" + CLIENT_MESSAGE + "]");
    for (var i = 0; i < old.length; i++) {
      old[i].remove();
    }
  }

  function describe(status) {
    if (status === 401) {
      return "Your session has ended. Reload the page to sign in again.";
    }
    if (status === 403) {
      return "The request was refused (HTTP 403). Reload the page and try again.";
    }
    return "The request failed (HTTP " + status + "). Try again, or reload the page.";
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail && event.detail.xhr;
    showError(describe(xhr ? xhr.status : 0));
  });

  document.addEventListener("htmx:sendError", function () {
    showError("The request failed: the server could not be reached. Check your connection and try again.");
  });

  // A new request makes an earlier failure message stale; server-rendered flash messages stay.
  document.addEventListener("htmx:beforeRequest", clearClientMessages);

  // The consent form opens the link in a new tab; this tab moves on to the question's state.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.thenGo) {
      var next = form.dataset.thenGo;
      window.setTimeout(function () { window.location.assign(next); }, 500);
    }
  });
})();
