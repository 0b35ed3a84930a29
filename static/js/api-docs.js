// Renders the OpenAPI schema with the vendored Redoc bundle; the schema's URL is on the container.
document.addEventListener("DOMContentLoaded", function () {
  var container = document.getElementById("redoc");
  Redoc.init(container.dataset.schemaUrl, { hideDownloadButton: false, expandResponses: "200,201" }, container);
});
