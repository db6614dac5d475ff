// Starts the vendored Swagger UI on /api/docs. A file of its own: the console's CSP allows no inline script.
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("swagger-ui");
    window.SwaggerUIBundle({
      url: root.dataset.openapiUrl,
      domNode: root,
      layout: "BaseLayout",
      deepLinking: true,
      validatorUrl: null,
      presets: [window.SwaggerUIBundle.presets.apis],
    });
  });
})();
