/* Annotation workspace: keyboard shortcuts, durable submits, timing. Needs htmx 2 (loaded first).
 *
 * Shortcuts are declared in the templates: an element with data-key="a" (several keys:
 * data-key="1 ArrowLeft") is checked (radio), focused (text field) or clicked (button, link)
 * when that key is pressed outside a text field. Inside a [data-rows] list only the active
 * .ws-row answers. Enter submits the label form, or clicks a visible [data-key~="Enter"].
 */
(function () {
  "use strict";

  // How htmx swaps 409/422 answers and settles: htmx_forms.js (loaded before this).

  const TEXT_TYPES = /^(text|search|number|email|url|tel|password|date)$/;
  const starts = new Map(); // client_token -> performance.now() when its form first appeared

  function isTextField(el) {
    if (!el || !el.tagName) return false;
    if (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable) return true;
    return el.tagName === "INPUT" && TEXT_TYPES.test(el.type || "text");
  }

  function visible(el) {
    const box = el.closest(".ws-opt") || el;
    return box.getClientRects().length > 0;
  }

  function root() {
    return document.querySelector("main");
  }

  function activeRow() {
    return root().querySelector("[data-rows] .ws-row.active");
  }

  function shortcutTargets(key) {
    const selector = `[data-key~="${CSS.escape(key)}"]`;
    const row = activeRow();
    return Array.from(root().querySelectorAll(selector)).filter(
      (el) => visible(el) && !el.disabled && (!row || !el.closest(".ws-row") || row.contains(el))
    );
  }

  function alertBox() {
    return document.getElementById("ws-alert");
  }

  function showAlert(message, tone) {
    const box = alertBox();
    if (!box) return window.alert(message);
    box.replaceChildren();
    const p = document.createElement("p");
    p.className = `ws-alert ${tone || "error"}`;
    p.setAttribute("role", "alert");
    p.textContent = message;
    box.appendChild(p);
    box.scrollIntoView({ block: "nearest" });
  }

  function clearAlert() {
    const box = alertBox();
    if (box) box.replaceChildren();
  }

  // --- Rows (pairwise dimensions, adjudication items) ----------------------------------------

  function setActiveRow(row) {
    if (!row) return;
    row.closest("[data-rows]").querySelectorAll(".ws-row.active").forEach((r) => r.classList.remove("active"));
    row.classList.add("active");
    row.scrollIntoView({ block: "nearest" });
  }

  function moveRow(step) {
    const list = root().querySelector("[data-rows]");
    if (!list) return false;
    const rows = Array.from(list.querySelectorAll(".ws-row")).filter((r) => !r.classList.contains("settled"));
    if (!rows.length) return false;
    const index = rows.indexOf(activeRow());
    setActiveRow(rows[Math.max(0, Math.min(rows.length - 1, index + step))] || rows[0]);
    return true;
  }

  // --- Acting on shortcuts ----------------------------------------------------------------------

  function focusFirstEdit(scope) {
    const field = scope.querySelector(".ws-edit textarea") || scope.querySelector(".ws-edit input, .ws-edit select");
    if (field) field.focus();
  }

  function activate(el) {
    if (el.type === "radio" || el.type === "checkbox") {
      el.checked = true;
      el.dispatchEvent(new Event("change", { bubbles: true }));
      const scope = el.closest("form") || root();
      if (/decision$/.test(el.name) && el.value === "edit") focusFirstEdit(scope);
      if (/reason$/.test(el.name) && el.value === "other") scope.querySelector("textarea[data-key~='c']")?.focus();
      return;
    }
    if (isTextField(el)) {
      el.focus();
      return;
    }
    el.click();
  }

  function currentForm() {
    const row = activeRow();
    return (row && row.querySelector("form[data-ws-form]")) || root().querySelector("form[data-ws-form]");
  }

  function submit(form) {
    if (!form || form.classList.contains("htmx-request")) return;
    // Always through its own submit button, clicked: htmx sends a form to the formaction of the
    // button clicked last, so after a refused skip (a button of this form) a bare requestSubmit()
    // would send the skip again and the label would be lost (issue #37).
    const button = form.querySelector("[data-submit]");
    if (button) button.click();
    else form.requestSubmit();
  }

  function toggleHelp() {
    const help = document.getElementById("ws-help");
    if (!help) return;
    if (help.open) help.close();
    else help.showModal();
  }

  // The guidelines (header): closing them hands the focus to the item, where Enter submits (on
  // their summary it would open them again); g opens them again.
  function closeGuidelines(details) {
    if (!details || !details.open) return false;
    details.open = false;
    const item = document.querySelector("#workspace .ws-item");
    if (item) item.focus({ preventScroll: true });
    else details.querySelector("summary")?.focus({ preventScroll: true });
    return true;
  }

  // A citation link points into its report's bibliography, folded by default: open it on the way.
  function openCited(link) {
    if (!link) return;
    const entry = document.getElementById(decodeURIComponent(link.hash.slice(1)));
    const details = entry && entry.closest("details");
    if (details && !details.open) details.open = true;
  }

  function onKeyDown(event) {
    const target = event.target;
    const help = document.getElementById("ws-help");
    if (help && help.open) {
      if (event.key === "?") {
        event.preventDefault();
        help.close();
      }
      return;
    }
    if (event.key === "Escape" && !isTextField(target) && closeGuidelines(document.querySelector("#ws-guidelines[open]"))) {
      event.preventDefault();
      return;
    }
    if (isTextField(target)) {
      if (event.key === "Escape") target.blur();
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        submit(target.form);
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    // The add-a-missing-item card has its own controls: only ? and n/+ (to close it) act there.
    if (target.closest && target.closest("[data-ws-aside]") && !["?", "n", "+"].includes(key)) return;
    if (key === "?") {
      event.preventDefault();
      toggleHelp();
      return;
    }
    if (key === "j" || key === "ArrowDown" || key === "k" || key === "ArrowUp") {
      if (moveRow(key === "j" || key === "ArrowDown" ? 1 : -1)) event.preventDefault();
      return;
    }
    if (key === "Enter") {
      if (["BUTTON", "A", "SUMMARY"].includes(target.tagName)) return; // the native action
      const [next] = shortcutTargets("Enter");
      event.preventDefault();
      if (event.repeat) return;
      if (next) next.click();
      else submit(currentForm());
      return;
    }
    const [el] = shortcutTargets(key);
    if (el) {
      event.preventDefault();
      activate(el);
    }
  }

  // --- Panels swapped in ------------------------------------------------------------------------

  function initPanel() {
    root()
      .querySelectorAll("form[data-timed]")
      .forEach((form) => {
        const token = form.querySelector("[name=client_token]")?.value;
        if (token && !starts.has(token)) starts.set(token, performance.now());
      });
    const list = root().querySelector("[data-rows]");
    if (list && !list.querySelector(".ws-row.active")) {
      const first = Array.from(list.querySelectorAll(".ws-row")).find((r) => !r.classList.contains("settled"));
      if (first) first.classList.add("active");
    }
  }

  function onSubmitCapture(event) {
    const form = event.target;
    if (!form.matches || !form.matches("form[data-timed]")) return;
    const token = form.querySelector("[name=client_token]")?.value;
    const field = form.querySelector("[name=seconds_taken]");
    if (token && field && starts.has(token)) {
      field.value = ((performance.now() - starts.get(token)) / 1000).toFixed(1);
    }
  }

  // --- Adding a missing item (verify) -----------------------------------------------------------

  function addFields(card) {
    return Array.from(card.querySelectorAll("form select, form textarea, form input:not([type=hidden])"));
  }

  // <details data-load="url" data-load-target="selector" data-load-swap="innerHTML|outerHTML">:
  // the part is fetched when the details first opens. A delegated listener rather than
  // hx-trigger="toggle": htmx wires the elements of a swapped panel only when it settles, and a
  // details opened before that (n pressed at once) would never load. A load that never reached
  // the server (network down) is retried on the next opening; an answer, even an error, is final.
  function onLazyToggle(event) {
    const details = event.target;
    if (!details.open || !details.dataset || !details.dataset.load || details.dataset.loading) return;
    const selector = details.dataset.loadTarget;
    const target = details.querySelector(selector) || details.closest(selector);
    if (!target) return;
    details.dataset.loading = "true";
    window.htmx
      .ajax("GET", details.dataset.load, { source: details, target, swap: details.dataset.loadSwap || "innerHTML" })
      .then(() => details.removeAttribute("data-load"))
      .finally(() => delete details.dataset.loading);
  }

  // Opening the card focuses its first field. A card swapped in open fires toggle too, in a race
  // with its settle (focusAddCard): a field already focused in the card is left alone.
  function onAddToggle(event) {
    const details = event.target;
    if (!details.matches || !details.matches("details[data-add]")) return;
    const fields = addFields(details);
    if (details.open && !fields.includes(document.activeElement)) fields[0]?.focus();
    else if (!details.open) details.closest(".ws-item")?.focus({ preventScroll: true });
  }

  // After the card was swapped alone (its own settle: htmx wires its form only then): the kind's
  // first field, the first invalid field, or (added) the item.
  function focusAddCard() {
    const card = document.querySelector("#ws-add[data-focus]");
    if (!card) return false;
    const how = card.dataset.focus;
    card.removeAttribute("data-focus");
    if (how === "item") {
      card.closest(".ws-item")?.focus({ preventScroll: true });
      return true;
    }
    const fields = addFields(card);
    const invalid = card.querySelector(".invalid textarea, .invalid input, .invalid select");
    // "kind": the form's first opening (the kind to add); "field": the chosen kind's first field
    (how === "error" && invalid ? invalid : how === "kind" ? fields[0] : fields[1] || fields[0])?.focus();
    return true;
  }

  function afterSettle(event) {
    initPanel();
    const swapped = event.detail.target;
    if (swapped && swapped.id === "ws-add") focusAddCard();
    if (!swapped || swapped.id !== "workspace") return;
    // A refused number (a rating's score out of scale) takes the focus to be typed again.
    const refused = swapped.querySelector("input[aria-invalid=true]");
    if (refused && !document.activeElement?.matches?.("input[aria-invalid=true]")) {
      refused.focus();
      refused.select();
      return;
    }
    // A key pressed between the swap and now (e focusing a field) already put the user to
    // work in the new panel: moving the focus would send what they type next to shortcuts.
    const active = document.activeElement;
    if (active && active !== swapped && swapped.contains(active) && !active.matches(".ws-item")) return;
    const invalid = swapped.querySelector(".error, .ws-errors");
    const field = invalid && invalid.closest("label, .ws-field, .ws-note, .ws-score")?.querySelector("textarea, input:not([type=radio])");
    if (field && isTextField(field)) field.focus();
    else focusArrival(swapped);
  }

  // What a panel asks to be read first (the judge's verdict revealed after a label) takes the
  // focus and is scrolled into view; else the item does, without scrolling.
  function focusArrival(scope) {
    const first = scope.querySelector(".ws-item [data-focus-on-arrival]");
    if (first) {
      first.focus({ preventScroll: true });
      first.scrollIntoView({ block: "nearest" });
    } else scope.querySelector(".ws-item")?.focus({ preventScroll: true });
  }

  // --- The next item held ready (issue #20) -----------------------------------------------------
  // The panel carries the next item, claimed and rendered, in #ws-after's template. Sending the
  // label form shows it at once: the sent item's section leaves <main> for a hidden holder and
  // the request names the item shown (X-Ws-Shown), so its answer is only the item after it
  // (into #ws-after), the flash and the progress line. A refusal (409, 422) answers with the
  // sent item and its message, as before; when the request failed the sent item comes back as
  // it was, the next one goes back behind it. Requests from the shown item wait for the answer.

  const sent = new Map(); // label form sent -> {section, shown, template}
  let waiting = []; // requests made from the shown item while the answer is awaited, in order

  function heldSections() {
    let hold = document.getElementById("ws-sent");
    if (!hold) {
      hold = document.createElement("div");
      hold.id = "ws-sent";
      hold.hidden = true;
      document.body.appendChild(hold);
    }
    return hold;
  }

  function onConfigRequest(event) {
    const form = event.detail.elt;
    if (!form.matches || !form.matches("form[data-ws-form]") || !form.closest("#workspace")) return;
    const template = document.querySelector("#ws-after > template[data-after]");
    const section = form.closest(".ws-item");
    const next = template && template.content.querySelector(".ws-item");
    if (!next || !section) return;
    event.detail.headers["X-Ws-Shown"] = next.dataset.item;
    const shown = document.importNode(next, true);
    template.remove();
    section.before(shown);
    heldSections().appendChild(section);
    sent.set(form, { section, shown, template });
    htmx.process(shown);
    initPanel();
    window.scrollTo(0, 0);
    // what the item asks to be focused first (a rating's first score field), else the item
    (shown.querySelector("[data-focus-on-arrival]") || shown).focus({ preventScroll: true });
  }

  function onConfirm(event) {
    const elt = event.detail.elt;
    if (!sent.size || !elt.closest || !elt.closest("#workspace")) return;
    event.preventDefault();
    waiting.push(() => event.detail.issueRequest(true));
  }

  function onAfterRequest(event) {
    const state = sent.get(event.detail.elt);
    if (!state) return;
    sent.delete(event.detail.elt);
    const status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (!event.detail.successful && status !== 409 && status !== 422) {
      // not saved and not answered: the sent item as it was, the next one behind it again
      if (state.shown.isConnected) state.shown.replaceWith(state.section);
      document.getElementById("ws-after")?.replaceChildren(state.template);
      state.section.focus({ preventScroll: true });
      waiting = []; // made from the item shown, which is gone again
    } else {
      state.section.remove();
    }
    if (!sent.size) waiting.splice(0).forEach((issue) => issue());
  }

  function onAfterSwap(event) {
    const slot = event.detail.target;
    if (!slot || slot.id !== "ws-after") return;
    const flash = slot.querySelector("[data-after-flash]");
    if (!flash) return; // htmx:afterSwap comes once per element swapped (the progress line too)
    const workspace = document.getElementById("workspace");
    workspace.querySelectorAll(":scope > .ws-flash").forEach((old) => old.remove());
    flash.removeAttribute("data-after-flash");
    workspace.prepend(flash);
  }

  function responseMessage(xhr) {
    const type = xhr.getResponseHeader("Content-Type") || "";
    if (type.startsWith("text/plain") && xhr.responseText) return xhr.responseText;
    if (xhr.status === 403) return "You may not do that in this project.";
    if (xhr.status === 404) return "That item or project no longer exists for you.";
    return `The server could not save this (error ${xhr.status}). Your input is kept: press Enter to try again — it will not be saved twice.`;
  }

  document.addEventListener("keydown", onKeyDown);
  // toggle does not bubble: capture it
  document.addEventListener("toggle", onLazyToggle, true);
  document.addEventListener("toggle", onAddToggle, true);
  document.addEventListener("submit", onSubmitCapture, true);
  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-help-open]")) toggleHelp();
    const close = event.target.closest("[data-guidelines-close]");
    if (close) closeGuidelines(close.closest("details"));
    openCited(event.target.closest && event.target.closest('a[href^="#ref-"]'));
  });
  document.addEventListener("focusin", (event) => {
    const row = event.target.closest && event.target.closest("[data-rows] .ws-row");
    if (row && !row.classList.contains("active")) setActiveRow(row);
  });
  document.addEventListener("pointerdown", (event) => {
    const row = event.target.closest && event.target.closest("[data-rows] .ws-row");
    if (row && !row.classList.contains("active")) setActiveRow(row);
  });
  document.body.addEventListener("htmx:confirm", onConfirm);
  document.body.addEventListener("htmx:configRequest", onConfigRequest);
  document.body.addEventListener("htmx:afterRequest", onAfterRequest);
  document.body.addEventListener("htmx:afterSwap", onAfterSwap);
  document.body.addEventListener("htmx:beforeRequest", clearAlert);
  document.body.addEventListener("htmx:afterSettle", afterSettle);
  document.body.addEventListener("htmx:responseError", (event) => showAlert(responseMessage(event.detail.xhr)));
  document.body.addEventListener("htmx:sendError", () =>
    showAlert("Could not reach the server. Nothing was lost: your input is still here — press Enter to try again.")
  );
  // A hold that runs out while the item is shown says so (the item may then go to someone else;
  // a label is still accepted while the item has a free slot).
  function markExpiredHolds() {
    document.querySelectorAll("#workspace .ws-hold[data-expires]").forEach((hold) => {
      if (Date.parse(hold.dataset.expires) > Date.now()) return;
      hold.removeAttribute("data-expires");
      hold.classList.remove("muted");
      hold.classList.add("ws-hold-expired");
      hold.setAttribute("role", "status");
      hold.textContent = `your hold ran out at ${hold.textContent.replace("reserved for you until ", "")}: the item may go to someone else (a label is still saved while it has a free slot)`;
    });
  }
  window.setInterval(markExpiredHolds, 15000);

  initPanel();
  const workspace = document.getElementById("workspace");
  if (workspace && workspace.querySelector("[data-focus-on-arrival]")) focusArrival(workspace);
})();
