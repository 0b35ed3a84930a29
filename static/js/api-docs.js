// The API docs page: Redoc renders the schema named by #redoc's data-schema-url (no inline script: CSP).
(function () {
  const root = document.getElementById("redoc");
  Redoc.init(root.dataset.schemaUrl, { hideDownloadButton: false, expandResponses: "200,201" }, root);
})();
