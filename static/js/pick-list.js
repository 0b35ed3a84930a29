// Checkbox lists that stand for a multi-select (templates/scoring/_pick_field.html): a filter
// box that hides the rows not matching, and a count of what is chosen. Delegated on the document,
// so lists htmx swaps in work without re-binding; without JavaScript the plain checkboxes work.
(function () {
  "use strict";

  function count(name) {
    var box = document.querySelector('[data-pick="' + name + '"]');
    var out = document.querySelector('[data-pick-count="' + name + '"]');
    if (!box || !out) return;
    var all = box.querySelectorAll("input[type=checkbox]");
    var chosen = box.querySelectorAll("input[type=checkbox]:checked");
    out.textContent = chosen.length + " of " + all.length + " chosen";
  }

  function prepare() {
    document.querySelectorAll("[data-pick-filter]").forEach(function (input) {
      input.hidden = false;
      count(input.getAttribute("data-pick-filter"));
    });
  }

  document.addEventListener("input", function (event) {
    var name = event.target.getAttribute && event.target.getAttribute("data-pick-filter");
    if (!name) return;
    var needle = event.target.value.trim().toLowerCase();
    var box = document.querySelector('[data-pick="' + name + '"]');
    if (!box) return;
    box.querySelectorAll(".pick-row").forEach(function (row) {
      row.hidden = needle !== "" && row.textContent.toLowerCase().indexOf(needle) === -1;
    });
  });
  document.addEventListener("change", function (event) {
    var box = event.target.closest && event.target.closest("[data-pick]");
    if (box) count(box.getAttribute("data-pick"));
  });
  document.addEventListener("DOMContentLoaded", prepare);
  document.addEventListener("htmx:afterSwap", prepare);
})();
