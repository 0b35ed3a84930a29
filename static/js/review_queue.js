/* The review queue by keyboard (annotation/review_queue/queue.html). Needs htmx 2 (loaded first).
 *
 * j/k move the current row, a accepts it and moves on to the next open row, r opens its reject
 * panel (reason focused; Enter rejects), e opens its edit panel with the caret at the END of the
 * first text field, x toggles its selection, Esc closes a panel. Each decision swaps the one row
 * (the server answers the row as it now is); the edit panel shows its difference to the proposal
 * as the expert types, before anything is saved.
 */
(function () {
  "use strict";

  // A refused decision (409 stale or settled, 422 invalid) comes back as the row with its message
  // and the expert's input, swapped (htmx_forms.js, loaded before this).

  const TEXT_TYPES = /^(text|search|number|email|url|tel|password|date)$/;
  let current = null;  // the current row's id
  let advanceFrom = null;  // the id of a row whose accept/reject should move the cursor on
  let loadingEdit = false;  // an edit panel's fields are on their way

  function rows() { return Array.from(document.querySelectorAll("[data-role=proposal]")); }
  function isOpen(row) { return row.dataset.status === "proposed"; }
  function isTextField(el) {
    if (!el || !el.tagName) return false;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable) return true;
    return el.tagName === "INPUT" && TEXT_TYPES.test(el.type || "text");
  }

  function setCurrent(row, focus) {
    if (!row) return;
    rows().forEach(function (r) { r.classList.remove("is-current"); r.removeAttribute("aria-current"); });
    row.classList.add("is-current");
    row.setAttribute("aria-current", "true");
    current = row.id;
    if (focus !== false) row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }

  function currentRow() {
    const row = current && document.getElementById(current);
    return row || null;
  }

  function move(step) {
    const all = rows();
    const row = currentRow();
    let index = row ? all.indexOf(row) + step : 0;
    if (index >= all.length) {
      const more = document.querySelector("[data-role=load-more] button");
      if (more) more.click();
      return;
    }
    setCurrent(all[Math.max(0, index)]);
  }

  function nextOpenAfter(row) {
    const all = rows();
    for (let i = all.indexOf(row) + 1; i < all.length; i++) if (isOpen(all[i])) return all[i];
    return null;
  }

  function panel(row, which) { return row.querySelector(".rq-" + which); }

  function closePanels(row) {
    row.querySelectorAll(".rq-panel").forEach(function (p) { p.hidden = true; });
    row.querySelectorAll("[aria-expanded]").forEach(function (b) { b.setAttribute("aria-expanded", "false"); });
  }

  function openPanel(row, which) {
    const form = panel(row, which);
    if (!form) return;
    closePanels(row);
    form.hidden = false;
    const button = row.querySelector("[data-action=" + which + "]");
    if (button) button.setAttribute("aria-expanded", "true");
    if (which === "edit") {
      const fields = form.querySelector(".rq-edit-fields");
      if (fields && !fields.children.length) {  // first opening: fetch the fields, then focus
        loadingEdit = true;  // keys wait for the fields: an "a" typed meanwhile must not accept the row
        htmx.ajax("GET", fields.dataset.src, { target: fields, swap: "innerHTML" }).then(function () {
          loadingEdit = false;
          focusEditField(form);
        }, function () { loadingEdit = false; });
        return;
      }
      focusEditField(form);
      return;
    }
    if (which === "reject") {
      const select = form.querySelector("select");
      select.focus({ preventScroll: true });
      form.scrollIntoView({ block: "nearest" });
      return;
    }
  }

  function focusEditField(form) {
    // the proposal's text (a textarea) before its short fields (a subgroup, a name)
    const field = form.querySelector("textarea") || form.querySelector("input[type=text]") ||
      form.querySelector("input:not([type=hidden]), select");
    if (!field) return;
    field.focus({ preventScroll: true });
    field.scrollIntoView({ block: "center" });
    if (typeof field.setSelectionRange === "function" && (field.tagName === "TEXTAREA" || field.type === "text")) {
      const end = field.value.length;  // the expert finishes the sentence: type after the text, never before it
      field.setSelectionRange(end, end);
      field.scrollTop = field.scrollHeight;
    }
  }

  // The difference of a text field to the proposal: the common start and end kept, what was
  // removed struck through, what was added marked; shown as the expert types.
  function showDiff(field) {
    let box = field.parentElement.querySelector(".rq-diff");
    if (!box) {
      box = document.createElement("div");
      box.className = "rq-diff";
      box.setAttribute("aria-live", "polite");
      field.insertAdjacentElement("afterend", box);
    }
    const before = field.defaultValue, after = field.value;
    box.textContent = "";
    if (before === after) return;
    let start = 0;
    while (start < before.length && start < after.length && before[start] === after[start]) start++;
    let end = 0;
    while (end < before.length - start && end < after.length - start &&
           before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
    const label = document.createElement("span");
    label.className = "muted";
    label.textContent = "Change: ";
    box.appendChild(label);
    const context = 40;
    const head = before.slice(Math.max(0, start - context), start);
    box.appendChild(document.createTextNode((start > context ? "…" : "") + head));
    const removed = before.slice(start, before.length - end);
    const added = after.slice(start, after.length - end);
    if (removed) { const del = document.createElement("del"); del.textContent = removed; box.appendChild(del); }
    if (added) { const ins = document.createElement("ins"); ins.textContent = added; box.appendChild(ins); }
    const tail = before.slice(before.length - end, before.length - end + context);
    box.appendChild(document.createTextNode(tail + (end > context ? "…" : "")));
  }

  function updateSelected() {
    const n = document.querySelectorAll("[data-role=proposal-select]:checked").length;
    const out = document.getElementById("rq-selected");
    if (out) out.textContent = n + " selected";
  }

  document.addEventListener("input", function (event) {
    if (event.target.closest(".rq-edit") && (event.target.tagName === "TEXTAREA" || event.target.type === "text")) {
      showDiff(event.target);
    }
  });

  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-role=proposal-select]")) updateSelected();
  });

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-action]");
    if (!button) {
      const row = event.target.closest("[data-role=proposal]");
      if (row && !event.target.closest("input, select, textarea, a, button, label")) setCurrent(row, false);
      return;
    }
    const row = button.closest("[data-role=proposal]");
    const action = button.dataset.action;
    if (action === "reject" || action === "edit") {
      setCurrent(row, false);
      if (panel(row, action).hidden) openPanel(row, action); else closePanels(row);
    } else if (action === "accept") {
      advanceFrom = row.id;
    } else if (action === "select-open") {
      document.querySelectorAll("[data-role=proposal-select]").forEach(function (box) { box.checked = true; });
      updateSelected();
    } else if (action === "select-none") {
      document.querySelectorAll("[data-role=proposal-select]").forEach(function (box) { box.checked = false; });
      updateSelected();
    }
  });

  document.addEventListener("submit", function (event) {
    const row = event.target.closest("[data-role=proposal]");
    if (row) advanceFrom = row.id;
  }, true);

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.metaKey) return;
    if (loadingEdit) { event.preventDefault(); return; }
    const target = event.target;
    const form = target.closest && target.closest(".rq-panel");
    if (form) {
      const row = form.closest("[data-role=proposal]");
      if (event.key === "Escape") { event.preventDefault(); closePanels(row); setCurrent(row); return; }
      const submits = form.classList.contains("rq-reject") ? event.key === "Enter" && !event.shiftKey
        : event.key === "Enter" && event.ctrlKey;
      if (submits) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (event.ctrlKey || isTextField(target)) return;
    const row = currentRow();
    switch (event.key) {
      case "j": event.preventDefault(); move(1); break;
      case "k": event.preventDefault(); move(-1); break;
      case "a":
        if (row && isOpen(row)) { event.preventDefault(); row.querySelector(".rq-accept").requestSubmit(); }
        break;
      case "r": if (row && isOpen(row)) { event.preventDefault(); openPanel(row, "reject"); } break;
      case "e": if (row && isOpen(row)) { event.preventDefault(); openPanel(row, "edit"); } break;
      case "x": {
        const box = row && row.querySelector("[data-role=proposal-select]");
        if (box) { event.preventDefault(); box.checked = !box.checked; updateSelected(); }
        break;
      }
      default:
    }
  });

  // A swapped row: after a decision the cursor moves on to the next open row; a refused one
  // stays current with its message. Rows loaded by "load more" leave the cursor where it is.
  htmx.on("htmx:load", function (event) {
    const row = event.detail.elt;
    if (!row || !row.matches || !row.matches("[data-role=proposal]")) return;
    if (row.id === advanceFrom) {
      advanceFrom = null;
      if (isOpen(row)) { setCurrent(row); return; }
      setCurrent(nextOpenAfter(row) || row);
    } else if (row.id === current) {
      // decided elsewhere (a bulk decision): the cursor moves on from a row that is settled now
      setCurrent(isOpen(row) ? row : nextOpenAfter(row) || row);
    }
    updateSelected();
  });

  htmx.on("htmx:afterRequest", function (event) {
    const status = document.getElementById("rq-status");
    if (!status || !event.detail.elt.closest("#rq-bulk")) return;
    const xhr = event.detail.xhr;
    status.classList.toggle("error", xhr.status >= 400);
    if (xhr.status >= 400) status.textContent = xhr.responseText || "Not applied (error " + xhr.status + ").";
    else updateSelected();
  });

  function start() {
    const first = rows().find(isOpen) || rows()[0];
    if (first) setCurrent(first);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
