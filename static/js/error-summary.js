// A refused form's error summary (templates/_form_errors.html): focus it on arrival, so it is in view
// and read out, and let each entry put the cursor in its field rather than only scroll to it.
(function () {
  function start() {
    const summary = document.querySelector("[data-error-summary]");
    if (!summary) return;
    summary.focus();
    summary.scrollIntoView({block: "start"});
    summary.addEventListener("click", (event) => {
      const link = event.target.closest("a[href^='#field-']");
      if (!link) return;
      const box = document.getElementById(link.getAttribute("href").slice(1));
      if (!box) return;
      event.preventDefault();
      const control = (link.dataset.field && document.getElementById(link.dataset.field))
        || box.querySelector("input:not([type=hidden]), select, textarea");
      box.scrollIntoView({block: "center"});
      if (control) control.focus({preventScroll: true});
      history.replaceState(null, "", link.getAttribute("href"));
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
